#include "sparse/append.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "base/atomic_file.h"
#include "base/endian.h"
#include "base/fd_io.h"
#include "sparse/decode_fd.h"
#include "sparse/files.h"
#include "sparse/writer.h"

namespace flashpipe::sparse {
namespace {

constexpr uint64_t kMaxRawChunk = uint64_t{64} << 20;

struct HeaderSink : NullSink {
  Status OnHeader(const FileHeader& h) override {
    header = h;
    return Status::Ok();
  }
  FileHeader header;
};

Result<InputFile> OpenRegular(const std::string& path) {
  FP_ASSIGN_OR_RETURN(InputFile in, OpenInput(path));
  struct stat st;
  if (::fstat(in.fd.get(), &st) != 0) return ErrnoError(fmt::format("stat {}", path));
  if (!S_ISREG(st.st_mode)) return InvalidArgument(fmt::format("{} is not a regular file", path));
  return in;
}

// Appends [0, size) of fd as RAW chunks of at most kMaxRawChunk.
Status AppendRawChunks(FdOutput& out, const FileHeader& h, int fd, const std::string& path, uint64_t size,
                       uint32_t* chunks) {
  const uint64_t max_blocks = kMaxRawChunk / h.blk_sz > 0 ? kMaxRawChunk / h.blk_sz : 1;
  std::vector<uint8_t> hdr(h.chunk_hdr_sz, 0);
  for (uint64_t done = 0; done < size;) {
    uint64_t blocks = std::min<uint64_t>(max_blocks, (size - done) / h.blk_sz);
    uint64_t bytes = blocks * h.blk_sz;
    if (bytes + h.chunk_hdr_sz > UINT32_MAX) return Internal("RAW chunk too large for its total_sz");
    SerializeChunkHeader({kChunkRaw, 0, static_cast<uint32_t>(blocks), static_cast<uint32_t>(h.chunk_hdr_sz + bytes)},
                         std::span<uint8_t, kChunkHeaderSize>(hdr.data(), kChunkHeaderSize));
    FP_RETURN_IF_ERROR(out.Write(hdr));
    FP_RETURN_IF_ERROR(out.CopyFrom(fd, done, bytes, path));
    done += bytes;
    ++*chunks;
  }
  return Status::Ok();
}

// Writes the rebuilt image to `out`: the old image (its chunks as they are,
// or, for a raw one, its bytes as RAW chunks under a new header), the new
// RAW chunks, the new counts.
Status Rebuild(int sparse_fd, const std::string& sparse_path, const FileHeader& h, bool old_is_raw,
               uint64_t old_size, int raw_fd, const std::string& raw_path, uint64_t raw_size, FdOutput& out) {
  uint32_t chunks = h.total_chunks;
  uint64_t blocks = h.total_blks;
  if (old_is_raw) {
    uint8_t fh[kFileHeaderSize];
    SerializeFileHeader(h, fh);
    FP_RETURN_IF_ERROR(out.Write(fh));
    FP_RETURN_IF_ERROR(AppendRawChunks(out, h, sparse_fd, sparse_path, old_size, &chunks));
    blocks = old_size / h.blk_sz;
  } else {
    FP_RETURN_IF_ERROR(out.CopyFrom(sparse_fd, 0, old_size, sparse_path));
  }
  FP_RETURN_IF_ERROR(AppendRawChunks(out, h, raw_fd, raw_path, raw_size, &chunks));
  uint8_t counts[8];
  StoreLE<uint32_t>(counts, static_cast<uint32_t>(blocks + raw_size / h.blk_sz));
  StoreLE<uint32_t>(counts + 4, chunks);
  return out.WriteAt(16, counts);
}

}  // namespace

Status AppendToSparse(const std::string& sparse_path, const std::string& raw_path) {
  FP_ASSIGN_OR_RETURN(InputFile image, OpenRegular(sparse_path));
  FP_ASSIGN_OR_RETURN(InputFile raw, OpenRegular(raw_path));
  if (raw.id == image.id) {
    return InvalidArgument(fmt::format("{} is the same file as the image {}: refusing to append an image to itself",
                                       raw_path, sparse_path));
  }
  uint8_t magic[4] = {};
  FP_ASSIGN_OR_RETURN(size_t got, PreadUpTo(image.fd.get(), magic, 0, sparse_path));
  bool old_is_raw = !HasSparseMagic(std::span<const uint8_t>(magic, got));
  const uint64_t old_size = image.size;
  HeaderSink sink;
  if (old_is_raw) {
    // As AOSP does: a raw image becomes a sparse one of 4096-byte blocks.
    sink.header.total_blks = 0;
    sink.header.total_chunks = 0;
    if (old_size % sink.header.blk_sz != 0) {
      return InvalidArgument(fmt::format("{} is not a sparse image, and as a raw image its size {} is not a "
                                         "multiple of the block size {}",
                                         sparse_path, old_size, sink.header.blk_sz));
    }
  } else {
    Status s = DecodeFd(image.fd.get(), sink, {.check_crc = false}, sparse_path);
    if (!s.ok()) return s.code() == Code::kCorrupt ? s.WithContext(sparse_path) : s;
  }
  const FileHeader& h = sink.header;
  const uint64_t raw_size = raw.size;
  if (raw_size % h.blk_sz != 0) {
    return InvalidArgument(
        fmt::format("{}: size {} is not a multiple of the image's block size {}", raw_path, raw_size, h.blk_sz));
  }
  if ((old_is_raw ? old_size / h.blk_sz : h.total_blks) + raw_size / h.blk_sz > UINT32_MAX) {
    return InvalidArgument(fmt::format("{} is too large to append: total_blks would pass 2^32-1", raw_path));
  }
  FP_ASSIGN_OR_RETURN(AtomicFile out_file, AtomicFile::Create(sparse_path));
  FdOutput out(out_file.fd(), out_file.temp_path());
  FP_RETURN_IF_ERROR(Rebuild(image.fd.get(), sparse_path, h, old_is_raw, old_size, raw.fd.get(), raw_path, raw_size,
                             out));
  return out_file.Commit();
}

}  // namespace flashpipe::sparse
