// Expanded sizes from xz indexes (liblzma's file info decoder), zstd frame
// headers (libzstd), lz4 frame headers (liblz4) and gzip trailers.
#include "input/compressed_size.h"

#include <lz4frame.h>
#include <lzma.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader: exported by every libzstd
#include <zstd.h>

#include <vector>

#include "base/endian.h"
#include "base/fd_io.h"

namespace flashpipe::input {
namespace {

// A bound on the zstd block headers read to size one file: a file of tiny
// blocks is rare and its size is then simply unknown.
constexpr uint64_t kMaxZstdBlocks = 1 << 20;

SizeHint Exact(uint64_t size) { return SizeHint{size, size}; }

class FileBytes {
 public:
  FileBytes(int fd, uint64_t start, uint64_t size) : fd_(fd), start_(start), size_(size) {}
  uint64_t size() const { return size_; }
  // Up to n bytes at pos (fewer at the end); empty on a read error.
  std::span<const uint8_t> At(uint64_t pos, size_t n) {
    buf_.resize(n);
    if (pos >= size_) return {};
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - pos));
    auto got = PreadUpTo(fd_, std::span(buf_).first(n), start_ + pos, "the image");
    return got.ok() ? std::span<const uint8_t>(buf_.data(), *got) : std::span<const uint8_t>();
  }

 private:
  int fd_;
  uint64_t start_, size_;
  std::vector<uint8_t> buf_;
};

// liblzma reads the stream footers and indexes, seeking as it asks.
SizeHint XzSize(FileBytes& file) {
  lzma_stream s = LZMA_STREAM_INIT;
  lzma_index* index = nullptr;
  if (lzma_file_info_decoder(&s, &index, UINT64_MAX, file.size()) != LZMA_OK) return {};
  SizeHint hint;
  uint64_t pos = 0;
  for (int round = 0; round < 100000; ++round) {
    std::span<const uint8_t> in = file.At(pos, 64 << 10);
    if (in.empty()) break;
    s.next_in = in.data();
    s.avail_in = in.size();
    lzma_ret r = lzma_code(&s, LZMA_RUN);
    if (r == LZMA_STREAM_END) {
      hint = Exact(lzma_index_uncompressed_size(index));
      lzma_index_end(index, nullptr);
      break;
    }
    if (r == LZMA_SEEK_NEEDED) {
      pos = s.seek_pos;
    } else if (r == LZMA_OK) {
      pos += in.size() - s.avail_in;
    } else {
      break;  // not a valid .xz file: the decoder will say why
    }
  }
  lzma_end(&s);
  return hint;
}

// Walks the frames: each frame header may record its content size; the
// 3-byte block headers give the way to the next frame.
SizeHint ZstdSize(FileBytes& file) {
  uint64_t pos = 0, total = 0, blocks = 0;
  while (pos < file.size()) {
    std::span<const uint8_t> head = file.At(pos, ZSTD_FRAMEHEADERSIZE_MAX);
    ZSTD_frameHeader fh;
    if (ZSTD_getFrameHeader(&fh, head.data(), head.size()) != 0) return {std::nullopt, total};
    if (fh.frameType == ZSTD_skippableFrame) {  // headerSize is not set for these
      pos += ZSTD_SKIPPABLEHEADERSIZE + fh.frameContentSize;
      continue;
    }
    if (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN) return {std::nullopt, total};
    total += fh.frameContentSize;
    pos += fh.headerSize;
    for (bool last = false; !last;) {
      std::span<const uint8_t> b = file.At(pos, 3);
      if (b.size() < 3 || ++blocks > kMaxZstdBlocks) return {std::nullopt, total};
      uint32_t header = b[0] | (b[1] << 8) | (uint32_t{b[2]} << 16);
      last = header & 1;
      uint32_t type = (header >> 1) & 3, size = header >> 3;
      if (type == 3) return {std::nullopt, total};  // reserved: corrupt
      pos += 3 + (type == 1 ? 1 : size);             // an RLE block stores one byte
    }
    if (fh.checksumFlag) pos += 4;
  }
  if (pos != file.size()) return {std::nullopt, total};
  return Exact(total);
}

// The last member's ISIZE: its size mod 2^32, so at most the whole size.
SizeHint GzipSize(FileBytes& file) {
  if (file.size() < 18) return {};  // smaller than an empty member
  std::span<const uint8_t> tail = file.At(file.size() - 4, 4);
  if (tail.size() < 4) return {};
  return {std::nullopt, LoadLE<uint32_t>(tail.data())};
}

uint64_t Lz4FirstFrameSize(std::span<const uint8_t> head) {
  LZ4F_dctx* d = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))) return 0;
  LZ4F_frameInfo_t info;
  size_t consumed = head.size();
  size_t r = LZ4F_getFrameInfo(d, &info, head.data(), &consumed);
  LZ4F_freeDecompressionContext(d);
  return LZ4F_isError(r) ? 0 : info.contentSize;  // 0: not recorded
}

}  // namespace

SizeHint SizeFromHead(ImageKind kind, std::span<const uint8_t> head) {
  if (kind == ImageKind::kLz4) return {std::nullopt, Lz4FirstFrameSize(head)};
  if (kind != ImageKind::kZstd) return {};
  unsigned long long size = ZSTD_getFrameContentSize(head.data(), head.size());
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR) return {};
  return {std::nullopt, size};
}

SizeHint SizeFromFile(ImageKind kind, int fd, uint64_t start, uint64_t size) {
  FileBytes file(fd, start, size);
  switch (kind) {
    case ImageKind::kXz: return XzSize(file);
    case ImageKind::kZstd: return ZstdSize(file);
    case ImageKind::kGzip: return GzipSize(file);
    case ImageKind::kLz4: return SizeFromHead(kind, file.At(0, LZ4F_HEADER_SIZE_MAX));
    default: return {};
  }
}

}  // namespace flashpipe::input
