// ImageReader: the writer's mirror. Reads a range of a Target's window front
// to back through an IoQueue, with up to the queue's depth requests in flight
// in a fixed pool of depth + 1 aligned buffers, and hands the bytes out in
// offset order, one piece at a time; while the caller works on one piece the
// next ones are being read.
//
//   FP_ASSIGN_OR_RETURN(auto r, ImageReader::Create(*target, queue.get(), 0, length, {}));
//   for (;;) {
//     FP_ASSIGN_OR_RETURN(ReadPiece p, r->Next());
//     if (p.length == 0) break;        // the end
//     ... p.hole ? zeros : p.data ...  // p.data is valid until the next Next()
//   }
//
// On a regular file, ranges the file does not store (SEEK_DATA/SEEK_HOLE,
// narrowed to whole aligned blocks) are not read: they come out as hole
// pieces, which read as zeros. Every request is checked against the window
// (Target::CheckRange) before it is submitted; with O_DIRECT a request is
// rounded up to the logical block at the range's end and the extra bytes are
// read but never handed out. A failed request is narrowed, by synchronous
// reads of one logical block each, to the first block that cannot be read,
// and the error names it. A regular file that ends before the range does
// (it shrank while it was read) is an error at the end, never zeros.
// Memory: (depth + 1) x request_size. Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "io/io_queue.h"
#include "io/target.h"

namespace flashpipe::io {

struct ReaderOptions {
  uint64_t request_size = 0;  // 0: DefaultRequestSize(geometry)
  bool skip_holes = true;     // regular files: SEEK_DATA/SEEK_HOLE
};

struct ReadPiece {
  uint64_t offset = 0;  // in the window
  uint64_t length = 0;  // 0: nothing is left
  bool hole = false;    // not stored by the file (reads as zeros); data is empty
  std::span<const uint8_t> data;  // `length` bytes unless hole
};

class ImageReader {
 public:
  // Reads [offset, offset + length) of the target's window. The queue must
  // be on target.fd() and outlive the reader.
  // REQUIRES: with O_DIRECT, window_offset + offset is a multiple of the
  // logical block (checked: an error otherwise).
  static Result<std::unique_ptr<ImageReader>> Create(const Target& target, IoQueue* queue, uint64_t offset,
                                                     uint64_t length, const ReaderOptions& options);
  ~ImageReader();  // waits for the reads still in flight

  // The next piece in offset order; the previous piece's data is released.
  Result<ReadPiece> Next();

  uint64_t request_size() const;
  uint64_t bytes_read() const;   // read from the medium, holes excluded
  uint64_t hole_bytes() const;

 private:
  ImageReader();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashpipe::io
