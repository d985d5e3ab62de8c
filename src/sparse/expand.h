// Expanding sparse images to a raw image (simg2img).
//
// FdImageSink writes decoder events to a file descriptor, through a
// WriteBehind (sparse/write_behind.h: the writing happens on a thread of its
// own, with O_DIRECT where it applies, while the decoder goes on):
//   kFile    a regular file: RAW and FILL written, FILL 0 and DONT_CARE as
//            holes (fallocate PUNCH_HOLE; zeros are written where the
//            filesystem cannot punch), so a later part may overlay an earlier.
//   kDevice  a block device, written in place: DONT_CARE leaves what is there.
//   kStream  a pipe or terminal: strictly sequential, DONT_CARE as zeros.
// Finish() waits until everything is written and returns the first write
// error (a write error also fails the event that finds it); call it before
// the output is committed. A sink destroyed without Finish still writes what
// was queued, but its error is lost.
// ExpandToPath lays several sparse images over each other in order, as the
// AOSP simg2img does with fastboot's split parts. Before anything is created
// it opens every input, refuses an output that is one of them, checks every
// input (a file: every chunk header; a stream: its file header) and a block
// device's size. A regular-file output is built in a temporary file beside
// it and renamed over it only on success (sparse/files.h), so a failure or a
// kill never leaves a complete-looking output. Each input is read ahead on
// a thread of its own (sparse/read_ahead.h), so reading, decoding and
// writing overlap.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "sparse/decoder.h"
#include "sparse/sink.h"
#include "sparse/write_behind.h"

namespace flashpipe::sparse {

class FdImageSink : public Sink {
 public:
  enum class Kind { kFile, kDevice, kStream };
  // Does not own `fd`. `capacity` bounds kDevice images (0: unbounded).
  FdImageSink(int fd, std::string name, Kind kind, uint64_t capacity = 0, WriteBehindOptions options = {});

  Status OnHeader(const FileHeader& header) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;

  // Waits until every event is written; the first write error.
  Status Finish() { return writer_.Finish(); }

  // Largest expanded size seen over the images decoded so far.
  uint64_t image_size() const { return image_size_; }
  const WriteBehind& writer() const { return writer_; }

 private:
  std::string name_;
  Kind kind_;
  uint64_t capacity_;
  uint64_t image_size_ = 0;
  WriteBehind writer_;
};

// inputs: sparse image paths ("-" = stdin, at most once); output: a path,
// "-" for stdout (one input only). Each input is decoded with `options`.
Status ExpandToPath(std::span<const std::string> inputs, const std::string& output, DecoderOptions options);

}  // namespace flashpipe::sparse
