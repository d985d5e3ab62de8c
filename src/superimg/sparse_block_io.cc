#include "superimg/sparse_block_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/endian.h"
#include "base/fd_io.h"
#include "input/sources.h"
#include "sparse/format.h"

namespace flashpipe::superimg {
namespace {

// Records chunks as runs; never reads a payload.
class IndexSink : public input::ImageSink {
 public:
  explicit IndexSink(std::vector<SparseBlockIo::Run>* runs) : runs_(runs) {}
  uint64_t size() const { return size_; }

  Status OnHeader(const sparse::FileHeader& h) override {
    blk_ = h.blk_sz;
    size_ = h.image_size();
    return Status::Ok();
  }
  Status OnRaw(uint64_t, std::span<const uint8_t>) override { return Status::Ok(); }
  Status OnFill(uint64_t, uint64_t, uint32_t) override { return Status::Ok(); }
  Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }
  Result<uint32_t> RawFromFd(uint64_t, int, uint64_t, uint64_t) override { return 0u; }
  Status OnChunk(const sparse::ChunkInfo& c) override {
    if (c.type == sparse::kChunkCrc32 || c.blocks == 0) return Status::Ok();
    SparseBlockIo::Run r{c.output_offset, uint64_t{c.blocks} * blk_, c.type, c.payload_offset, c.value};
    if (!runs_->empty() && Extends(runs_->back(), r)) {
      runs_->back().length += r.length;
      return Status::Ok();
    }
    if (runs_->size() == SparseBlockIo::kMaxRuns) {
      return Unsupported(fmt::format("more than {} runs of chunks: too fragmented to read at random",
                                     SparseBlockIo::kMaxRuns));
    }
    runs_->push_back(r);
    return Status::Ok();
  }

 private:
  static bool Extends(const SparseBlockIo::Run& a, const SparseBlockIo::Run& b) {
    if (a.type != b.type || a.offset + a.length != b.offset) return false;
    if (a.type == sparse::kChunkFill) return a.pattern == b.pattern;
    if (a.type == sparse::kChunkRaw) return a.file_offset + a.length == b.file_offset;
    return true;
  }

  std::vector<SparseBlockIo::Run>* runs_;
  uint32_t blk_ = 0;
  uint64_t size_ = 0;
};

}  // namespace

Result<std::unique_ptr<SparseBlockIo>> SparseBlockIo::Open(int fd, std::string name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("stat {}", name));
  UniqueFd dup(::dup(fd));
  if (!dup.valid()) return ErrnoError(fmt::format("dup {}", name));
  std::unique_ptr<SparseBlockIo> io(new SparseBlockIo(fd, name));
  IndexSink sink(&io->runs_);
  auto source = input::MakeSparseFileSource(std::move(dup), name, static_cast<uint64_t>(st.st_size),
                                            {.check_crc = false});
  FP_RETURN_IF_ERROR(source->Run(&sink));
  io->size_ = sink.size();
  return io;
}

Status SparseBlockIo::ReadRun(const Run& r, uint64_t offset, std::span<uint8_t> out) {
  const uint64_t in_run = offset - r.offset;
  switch (r.type) {
    case sparse::kChunkRaw: return PreadExact(fd_, out, r.file_offset + in_run, name_);
    case sparse::kChunkFill: {
      uint8_t p[4];
      StoreLE<uint32_t>(p, r.pattern);
      for (size_t i = 0; i < out.size(); ++i) out[i] = p[(in_run + i) % 4];
      return Status::Ok();
    }
    default:
      std::memset(out.data(), 0, out.size());
      return Status::Ok();
  }
}

Status SparseBlockIo::Read(uint64_t offset, std::span<uint8_t> out) {
  FP_RETURN_IF_ERROR(lp::CheckRange(name_, size_, offset, out.size()));
  // The run holding `offset`: the last one starting at or before it.
  auto it = std::upper_bound(runs_.begin(), runs_.end(), offset, [](uint64_t o, const Run& r) { return o < r.offset; });
  while (!out.empty()) {
    if (it == runs_.begin() || std::prev(it)->offset + std::prev(it)->length <= offset) {
      return Internal(fmt::format("{}: no chunk covers byte 0x{:x}", name_, offset));
    }
    const Run& r = *std::prev(it);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), r.offset + r.length - offset));
    FP_RETURN_IF_ERROR(ReadRun(r, offset, out.first(n)));
    out = out.subspan(n);
    offset += n;
    ++it;
  }
  return Status::Ok();
}

Status SparseBlockIo::Write(uint64_t, std::span<const uint8_t>) {
  return Unsupported(fmt::format("{} is a sparse image: it is read, never written in place", name_));
}

Status SparseBlockIo::Sync() { return Write(0, {}); }

}  // namespace flashpipe::superimg
