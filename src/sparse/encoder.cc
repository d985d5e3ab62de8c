#include "sparse/encoder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "base/endian.h"
#include "base/fd_io.h"
#include "sparse/files.h"
#include "sparse/read_ahead.h"
#include "sparse/run_emitter.h"
#include "sparse/write_behind.h"

namespace flashpipe::sparse {

bool IsUniformBlock(std::span<const uint8_t> block, uint32_t* pattern) {
  const uint8_t* p = block.data();
  const size_t n = block.size();
  const uint32_t first = LoadLE<uint32_t>(p);
  const uint64_t word2 = first * 0x0000000100000001ull;
  size_t i = 0;
  // 64 bytes per step, no branch inside: the compiler turns this into vector
  // loads, xors and ors; random data leaves at the first step.
  for (; i + 64 <= n; i += 64) {
    uint64_t diff = 0;
    for (size_t k = 0; k < 64; k += 8) diff |= LoadLE<uint64_t>(p + i + k) ^ word2;
    if (diff != 0) return false;
  }
  for (; i < n; i += 4) {
    if (LoadLE<uint32_t>(p + i) != first) return false;
  }
  *pattern = first;
  return true;
}

namespace {

// Classifies the whole blocks in `buf` and hands them to `em` as runs.
Status EmitBlocks(std::span<const uint8_t> buf, uint32_t blk, RunEmitter& em) {
  size_t raw_start = 0, i = 0;
  while (i < buf.size()) {
    uint32_t pattern;
    if (!IsUniformBlock(buf.subspan(i, blk), &pattern)) {
      i += blk;
      continue;
    }
    if (raw_start < i) FP_RETURN_IF_ERROR(em.Raw(buf.subspan(raw_start, i - raw_start)));
    uint64_t n = 1;
    uint32_t next;
    for (i += blk; i < buf.size() && IsUniformBlock(buf.subspan(i, blk), &next) && next == pattern; i += blk) ++n;
    FP_RETURN_IF_ERROR(em.Fill(n, pattern));
    raw_start = i;
  }
  if (raw_start < buf.size()) FP_RETURN_IF_ERROR(em.Raw(buf.subspan(raw_start)));
  return Status::Ok();
}

// Emits the pieces of a ReadAhead as blocks: a block split between two
// pieces is put together in `carry_`, the final partial block is padded with
// zeros, and a gap between pieces (img2simg -s: a hole) is DONT_CARE.
class Scanner {
 public:
  explicit Scanner(uint32_t blk) : blk_(blk), carry_(blk) {}

  // Returns the offset after the last byte read.
  Result<uint64_t> Run(ReadAhead& in, RunEmitter& em) {
    uint64_t next = 0;  // the input offset blocks have been emitted (or carried) up to
    for (;;) {
      FP_ASSIGN_OR_RETURN(ReadAhead::Piece piece, in.Next());
      if (piece.data.empty()) break;
      if (piece.offset > next) {  // a hole; pieces after one start on a block boundary
        FP_RETURN_IF_ERROR(FlushCarry(em));
        next = RoundUp(next);
        if (piece.offset > next) FP_RETURN_IF_ERROR(em.Skip((piece.offset - next) / blk_));
      }
      FP_RETURN_IF_ERROR(Take(piece.data, em));
      next = piece.offset + piece.data.size();
    }
    FP_RETURN_IF_ERROR(FlushCarry(em));
    return next;
  }

  // -s: DONT_CARE from the last piece up to the input's `size`.
  Status SkipTo(uint64_t read_end, uint64_t size, RunEmitter& em) {
    uint64_t from = RoundUp(read_end), to = RoundUp(size);
    return to > from ? em.Skip((to - from) / blk_) : Status::Ok();
  }

 private:
  uint64_t RoundUp(uint64_t n) const { return (n + blk_ - 1) / blk_ * blk_; }

  Status Take(std::span<const uint8_t> data, RunEmitter& em) {
    if (carry_len_ > 0) {
      size_t n = std::min(blk_ - carry_len_, data.size());
      std::memcpy(carry_.data() + carry_len_, data.data(), n);
      carry_len_ += n;
      data = data.subspan(n);
      if (carry_len_ < blk_) return Status::Ok();
      carry_len_ = 0;
      FP_RETURN_IF_ERROR(EmitBlocks(carry_, blk_, em));
    }
    size_t whole = data.size() / blk_ * blk_;
    if (whole > 0) FP_RETURN_IF_ERROR(EmitBlocks(data.first(whole), blk_, em));
    std::memcpy(carry_.data(), data.data() + whole, data.size() - whole);
    carry_len_ = data.size() - whole;
    return Status::Ok();
  }

  Status FlushCarry(RunEmitter& em) {
    if (carry_len_ == 0) return Status::Ok();
    std::memset(carry_.data() + carry_len_, 0, blk_ - carry_len_);
    carry_len_ = 0;
    return EmitBlocks(carry_, blk_, em);
  }

  size_t blk_;
  std::vector<uint8_t> carry_;
  size_t carry_len_ = 0;
};

// -s: the data extents of the input (SEEK_DATA/SEEK_HOLE), widened to whole
// blocks and cut at `size`; called on a reader thread.
RangeSource DataExtents(int fd, std::string name, uint64_t size, uint32_t blk) {
  const uint64_t end_blk = (size + blk - 1) / blk;
  return [=, blk_pos = uint64_t{0}]() mutable -> Result<std::optional<ByteRange>> {
    if (blk_pos >= end_blk) return std::optional<ByteRange>();
    off_t data = ::lseek(fd, static_cast<off_t>(blk_pos * blk), SEEK_DATA);
    if (data < 0 && errno != ENXIO) return ErrnoError(fmt::format("lseek(SEEK_DATA) {}", name));
    uint64_t data_blk = data < 0 ? end_blk : std::min<uint64_t>(end_blk, static_cast<uint64_t>(data) / blk);
    if (data_blk >= end_blk) {
      blk_pos = end_blk;
      return std::optional<ByteRange>();
    }
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) return ErrnoError(fmt::format("lseek(SEEK_HOLE) {}", name));
    uint64_t hole_blk = std::min<uint64_t>(end_blk, (static_cast<uint64_t>(hole) + blk - 1) / blk);
    uint64_t from = data_blk * blk;
    blk_pos = hole_blk;
    return std::optional<ByteRange>(ByteRange{from, std::min<uint64_t>(size, hole_blk * blk) - from});
  };
}

struct InputInfo {
  bool seekable = false;
  uint64_t size = 0;
};

Result<InputInfo> Probe(int fd, std::string_view name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("stat {}", name));
  InputInfo info;
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    off_t end = ::lseek(fd, 0, SEEK_END);
    if (end >= 0 && ::lseek(fd, 0, SEEK_SET) == 0) {
      info.seekable = true;
      info.size = static_cast<uint64_t>(end);
    }
  }
  return info;
}

// One pass over the input in the given mode; returns the input size. A
// seekable input is read from offset 0 and left positioned at its end.
Result<uint64_t> Pass(int fd, std::string_view name, const InputInfo& info, const EncoderOptions& o,
                      RunEmitter& em) {
  std::unique_ptr<ReadAhead> in;
  if (!info.seekable) {
    in = ReadAhead::Stream(fd, std::string(name), 0, o.read_ahead);
  } else {
    RangeSource ranges = o.holes ? DataExtents(fd, std::string(name), info.size, o.block_size)
                                 : ReadAhead::OneRange(0, ReadAhead::kToEof);
    in = std::make_unique<ReadAhead>(fd, std::string(name), std::move(ranges), o.read_ahead);
  }
  Scanner scan(o.block_size);
  FP_ASSIGN_OR_RETURN(uint64_t size, scan.Run(*in, em));
  if (o.holes) {
    FP_RETURN_IF_ERROR(scan.SkipTo(size, info.size, em));
    size = info.size;
  }
  FP_RETURN_IF_ERROR(em.Close());
  if (info.seekable && ::lseek(fd, static_cast<off_t>(size), SEEK_SET) < 0) {
    return ErrnoError(fmt::format("lseek {}", name));
  }
  return size;
}

Result<uint32_t> BlockCount(uint64_t size, uint32_t blk, std::string_view name) {
  if (size == 0) return InvalidArgument(fmt::format("{} is empty: a sparse image holds at least one block", name));
  uint64_t blocks = (size + blk - 1) / blk;
  if (blocks > UINT32_MAX)
    return InvalidArgument(fmt::format("{} is too large for block size {}: {} blocks > 2^32-1", name, blk, blocks));
  return static_cast<uint32_t>(blocks);
}

}  // namespace

Status CheckEncodable(int in_fd, std::string_view in_name, bool output_seekable, const EncoderOptions& o) {
  if (o.block_size == 0 || o.block_size % 4 != 0)
    return InvalidArgument(fmt::format("block size {} is not a non-zero multiple of 4", o.block_size));
  if (o.block_size > UINT32_MAX - kChunkHeaderSize)  // a one-block RAW chunk's total_sz must fit 32 bits
    return InvalidArgument(fmt::format("block size {} is too large: a RAW chunk of one block would exceed 2^32-1 bytes",
                                       o.block_size));
  FP_ASSIGN_OR_RETURN(InputInfo info, Probe(in_fd, in_name));
  if (o.holes && !info.seekable) return InvalidArgument(fmt::format("-s needs a seekable input; {} is not", in_name));
  if (!output_seekable && !info.seekable) {
    return InvalidArgument(fmt::format(
        "cannot write a sparse image to a pipe from a pipe: the chunk counts come first, so either the output "
        "or the input ({}) must be a file", in_name));
  }
  if (info.seekable) FP_RETURN_IF_ERROR(BlockCount(info.size, o.block_size, in_name).status());
  return Status::Ok();
}

Result<EncodeStats> EncodeImage(int in_fd, std::string_view in_name, Output& out, const EncoderOptions& o) {
  const bool seek_back = out.seekable();
  FP_RETURN_IF_ERROR(CheckEncodable(in_fd, in_name, seek_back, o));
  FP_ASSIGN_OR_RETURN(InputInfo info, Probe(in_fd, in_name));
  ChunkWriter w(&out, o.block_size);
  std::vector<uint32_t> plan;
  EncodeStats stats;
  uint32_t planned_chunks = 0;
  if (!seek_back) {
    RunEmitter planner(RunEmitter::Mode::kPlan, nullptr, o.block_size, o.max_raw_chunk, o.crc, &plan);
    FP_ASSIGN_OR_RETURN(uint64_t size, Pass(in_fd, in_name, info, o, planner));
    FP_ASSIGN_OR_RETURN(stats.total_blks, BlockCount(size, o.block_size, in_name));
    planned_chunks = planner.chunks() + (o.crc ? 1 : 0);
  }
  FP_RETURN_IF_ERROR(w.FileHeader(stats.total_blks, planned_chunks));
  RunEmitter em(seek_back ? RunEmitter::Mode::kSeekBack : RunEmitter::Mode::kFromPlan, &w, o.block_size,
                o.max_raw_chunk, o.crc, &plan);
  FP_ASSIGN_OR_RETURN(stats.input_bytes, Pass(in_fd, in_name, info, o, em));
  if (o.crc) FP_RETURN_IF_ERROR(w.Crc32(em.crc()));
  FP_ASSIGN_OR_RETURN(uint32_t blocks, BlockCount(stats.input_bytes, o.block_size, in_name));
  if (seek_back) {
    stats.total_blks = blocks;
    FP_RETURN_IF_ERROR(w.PatchFileHeader(blocks, w.chunks()));
  } else if (blocks != stats.total_blks || w.chunks() != planned_chunks || em.plan_used() != plan.size()) {
    return Corrupt(fmt::format("{} changed between the two passes", in_name));
  }
  FP_RETURN_IF_ERROR(w.Flush());
  stats.total_chunks = w.chunks();
  stats.output_bytes = w.offset();
  stats.crc = em.crc();
  return stats;
}

Result<EncodeStats> EncodeToPath(const std::string& in_path, const std::string& out_path, const EncoderOptions& o) {
  FP_ASSIGN_OR_RETURN(InputFile in, OpenInput(in_path));
  FP_ASSIGN_OR_RETURN(OutputFile out, OutputFile::Check(out_path, {&in, 1}));
  FP_RETURN_IF_ERROR(CheckEncodable(in.fd.get(), in.name, out.seekable(), o));
  FP_RETURN_IF_ERROR(out.Open());
  WriteBehindOutput output(out.fd(), out.name());
  FP_ASSIGN_OR_RETURN(EncodeStats stats, EncodeImage(in.fd.get(), in.name, output, o));
  FP_RETURN_IF_ERROR(output.Finish());
  FP_RETURN_IF_ERROR(out.Commit());
  return stats;
}

}  // namespace flashpipe::sparse
