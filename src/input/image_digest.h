// ImageDigest: the SHA-256 of an image's expanded content, taken on a thread
// of its own from the events a write delivers, so the write does not wait
// for the hash (OpenSSL, about 1.9 GB/s with the SHA extensions).
//
// The content is what a fresh target holds after the write: RAW bytes as
// they are, FILL as its pattern, and everything no event covers (DONT_CARE,
// holes, the blocks a bmap leaves unmapped) as zeros, up to the image's size.
// So the digest of a sparse image is that of simg2img's output, of a raw
// file that of the file, of a compressed image that of its decompressed
// bytes, and of a raw image with a bmap that of the file when its unmapped
// blocks hold zeros (as bmaptool create maps them, holes). It does not
// depend on how the image was packed, which is what lets an orchestrator
// compare it with `sha256sum` of the raw image.
//
// Events must come in image order without overlapping (every source does,
// but overlaid sparse parts): otherwise, or when a file range cannot be read
// again, Finish() gives nullopt. RAW data handed as bytes is copied into
// buffers that are reused (at most 64 MiB waits; the producer blocks beyond,
// and that time is counted in waited()); RAW data handed as a file range is
// read again by the thread, from the page cache the write just filled.
// Zeros and patterns cost hashing time like data (SHA-256 has no shortcut
// for them): an image that is mostly holes costs about 0.65 s per GB here
// (OpenSSL with the SHA extensions, 1.5 GB/s), in parallel with the write
// and its sync. The 64 MiB let the writer run on through the data that
// follows a long zero run while the thread is still hashing the zeros.
// Thread-compatible: one producer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/status.h"

namespace flashpipe::input {

class ImageDigest {
 public:
  static Result<std::unique_ptr<ImageDigest>> Start();
  ~ImageDigest();  // stops the thread (also unfinished)

  void Data(uint64_t offset, std::span<const uint8_t> data);
  void Fill(uint64_t offset, uint64_t length, uint32_t pattern);
  // `fd` must stay open until Finish() or the destructor.
  void FileRange(uint64_t offset, int fd, uint64_t in_offset, uint64_t length);

  // Lowercase hex SHA-256 of the first `size` bytes; nullopt when the events
  // did not allow it (overlap, out of order, past `size`, a failed read).
  std::optional<std::string> Finish(uint64_t size);

  // After Finish(): seconds the producer spent waiting for the thread (a full
  // queue, and Finish() itself), and the thread's hashing rate in bytes/s.
  double waited() const;
  double bytes_per_second() const;

  struct Impl;

 private:
  explicit ImageDigest(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashpipe::input
