#include "sparse/append.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "base/endian.h"
#include "base/unique_fd.h"
#include "sparse/decode_fd.h"
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

Result<UniqueFd> Open(const std::string& path, struct stat* st) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("open {}", path));
  if (::fstat(fd.get(), st) != 0) return ErrnoError(fmt::format("stat {}", path));
  if (!S_ISREG(st->st_mode)) return InvalidArgument(fmt::format("{} is not a regular file", path));
  return fd;
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
  struct stat sst, rst;
  FP_ASSIGN_OR_RETURN(UniqueFd sfd, Open(sparse_path, &sst));
  FP_ASSIGN_OR_RETURN(UniqueFd rfd, Open(raw_path, &rst));
  uint8_t magic[4] = {};
  ssize_t got = ::pread(sfd.get(), magic, sizeof magic, 0);
  if (got < 0) return ErrnoError(fmt::format("read {}", sparse_path));
  bool old_is_raw = !HasSparseMagic(std::span<const uint8_t>(magic, static_cast<size_t>(got)));
  uint64_t old_size = static_cast<uint64_t>(sst.st_size);
  HeaderSink sink;
  Status s;
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
    s = DecodeFd(sfd.get(), sink, {.check_crc = false}, sparse_path);
    if (!s.ok()) return s.code() == Code::kCorrupt ? s.WithContext(sparse_path) : s;
  }
  const FileHeader& h = sink.header;
  uint64_t raw_size = static_cast<uint64_t>(rst.st_size);
  if (raw_size % h.blk_sz != 0) {
    return InvalidArgument(
        fmt::format("{}: size {} is not a multiple of the image's block size {}", raw_path, raw_size, h.blk_sz));
  }
  if ((old_is_raw ? old_size / h.blk_sz : h.total_blks) + raw_size / h.blk_sz > UINT32_MAX) {
    return InvalidArgument(fmt::format("{} is too large to append: total_blks would pass 2^32-1", raw_path));
  }
  std::string tmp = sparse_path + ".XXXXXX";
  UniqueFd out_fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!out_fd.valid()) return ErrnoError(fmt::format("create a temporary file next to {}", sparse_path));
  FdOutput out(out_fd.get(), tmp);
  s = Rebuild(sfd.get(), sparse_path, h, old_is_raw, old_size, rfd.get(), raw_path, raw_size, out);
  if (s.ok() && ::fchmod(out_fd.get(), sst.st_mode & 07777) != 0) s = ErrnoError(fmt::format("chmod {}", tmp));
  if (s.ok() && ::fsync(out_fd.get()) != 0) s = ErrnoError(fmt::format("fsync {}", tmp));
  if (s.ok() && out_fd.Close() != 0) s = ErrnoError(fmt::format("close {}", tmp));
  if (s.ok() && ::rename(tmp.c_str(), sparse_path.c_str()) != 0)
    s = ErrnoError(fmt::format("rename {} to {}", tmp, sparse_path));
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

}  // namespace flashpipe::sparse
