// DownloadStream: the settled bytes of one download, handed from the thread
// that receives it to a writer on another thread while it arrives
// (stream-flash: the client named the partition before the download, so the
// image is written as it lands instead of after its last byte).
//
// Landing (download.h) publishes after every receive: the pieces it closed
// and the open piece it is filling, all of whose bytes are in their final
// place in the download buffer (a piece only ever grows or closes where it
// ended; bytes a gap moves are moved before they are published). The writer
// takes them in order with Next(), as views of the buffer: no copy. The
// buffer must outlive the writer's use of the views (the device keeps it busy
// until the writer's job ends).
//
//   receiver:  stream.Publish(pieces, open, received)  ... or Abort(why)
//   writer:    while (auto spans = stream.Next(step); ok && !spans->empty()) feed(*spans)
//
// Thread-safe: one publisher, one taker.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "base/status.h"

namespace flashpipe::fastboot {

class DownloadStream {
 public:
  // A download of `size` bytes.
  explicit DownloadStream(uint64_t size) : size_(size) {}

  uint64_t size() const { return size_; }
  // How much a writer takes at a time: an eighth of the download, at most
  // 2 MiB (a wake-up costs nothing next to its write, and the write ends
  // soon after the last byte), at least 64 KiB.
  uint64_t step() const;

  // Receiver: `closed` are every piece closed so far (in order), `open` the
  // piece being filled (may be empty), `received` the download's bytes in.
  // REQUIRES: what was published before is a prefix of what is published now.
  void Publish(const std::vector<std::span<const uint8_t>>& closed, std::span<const uint8_t> open,
               uint64_t received);
  // Receiver: the download will not complete; Next() returns `why`.
  void Abort(Status why);

  // Writer: the settled bytes after those it took before, in order, once at
  // least `step` of them (or all the rest) are there; empty when all `size`
  // bytes were taken. After an abort: what had arrived, then the error.
  Result<std::vector<std::span<const uint8_t>>> Next(uint64_t step);

 private:
  const uint64_t size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::span<const uint8_t>> pieces_;  // closed ones, then the open one if any
  size_t closed_ = 0;                             // pieces_[0, closed_) are closed
  uint64_t received_ = 0;
  uint64_t notified_ = 0;  // received_ at the last wake-up
  uint64_t wanted_ = 0;    // the taker waits until received_ reaches this
  Status aborted_;
  // The taker's place: pieces_[next_piece_] from byte next_offset_.
  size_t next_piece_ = 0;
  uint64_t next_offset_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace flashpipe::fastboot
