// WriteBehind: writes a converter's output on a thread of its own, so that
// the caller fills the next buffer while the previous ones go to the disk.
//
// The caller queues writes at output offsets (Write, Fill) and, on a regular
// file, zeroed ranges (Zero: a punched hole). They are copied into a fixed
// ring of `buffers` buffers of buffer_size bytes: a write that continues the
// last one extends it, one elsewhere starts a new segment of the buffer, and
// a write into the range of the last segment of the buffer being filled is
// made in place (the encoder patches a chunk header it wrote moments ago). A
// full buffer goes to the writer thread, which carries out its segments in
// the order they were queued, so overlapping writes end as the last one says.
//
// How the bytes are written. A stream (pipe, terminal, socket): write(2), in
// order (each write must continue the last). A regular file or block device:
// the 4 KiB-aligned middle of each segment of 64 KiB or more with O_DIRECT,
// through a second descriptor opened on /proc/self/fd/N (no copy into the
// page cache, and the final fsync finds the data already on the disk); the
// rest (unaligned heads and tails, small segments, a filesystem that refuses
// O_DIRECT) through `fd` and the page cache, with writeback started behind
// the write position (sync_file_range) so the final fsync stays short.
// Segments start in buffer memory at the same offset modulo 4096 as in the
// file, so their aligned middles are aligned in memory too.
//
// Errors: the first failure of the writer thread (with the output's name and
// byte offset, "write out.img at byte 0x1000: No space left on device")
// stops it; every later Write/Fill/Zero and Finish returns it. Nothing is
// ever reported written that was not. Durability is the caller's: fsync after
// Finish. Destroying a WriteBehind without Finish still writes what was
// queued (as a synchronous writer would have written it already), but its
// error is lost: call Finish.
// Memory: buffers * buffer_size, allocated once. One producer thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"
#include "sparse/pipe_buffer.h"
#include "sparse/writer.h"

namespace flashpipe::sparse {

struct WriteBehindOptions {
  size_t buffer_size = size_t{8} << 20;  // a multiple of 4096
  int buffers = 2;                       // one filled while the other is written
  bool direct = true;  // O_DIRECT where it applies (see above)
};

class WriteBehind {
 public:
  enum class Mode { kSeekable, kStream };

  // Does not own `fd`, which must outlive the WriteBehind. `name` is for messages.
  WriteBehind(int fd, std::string name, Mode mode, WriteBehindOptions options = {});
  ~WriteBehind();  // Finish(), its error dropped
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  // Queues `data` (copied) for `offset`, after everything queued before.
  // kStream: offset must be end().
  Status Write(uint64_t offset, std::span<const uint8_t> data);
  // Queues `length` bytes of the little-endian 32-bit `pattern`, its first
  // byte at `offset`.
  Status Fill(uint64_t offset, uint64_t length, uint32_t pattern);
  // kSeekable regular files: queues zeros over the range by punching a hole
  // (writing zeros where the filesystem cannot punch).
  Status Zero(uint64_t offset, uint64_t length);
  // Hands over what is queued, waits until it is written and the thread has
  // ended; returns the first error. Call once.
  Status Finish();

  uint64_t end() const { return end_; }  // highest offset queued so far, + 1
  uint64_t direct_bytes() const;         // written with O_DIRECT so far
  uint64_t buffered_bytes() const;       // written through the page cache so far

 private:
  struct Segment {
    uint64_t offset = 0;
    size_t at = 0;       // position in the buffer's memory
    uint64_t length = 0;
    bool zero = false;   // a hole to punch, no memory
  };
  struct Buffer {
    PipeBuffer mem;
    std::vector<Segment> segments;
    size_t used = 0;
    bool free = true;
  };
  template <typename Copy>
  Status Put(uint64_t offset, uint64_t length, Copy copy);
  Status Current();
  void Submit();
  void Run();
  Status WriteBuffer(const Buffer& b);
  Status WriteSegment(const uint8_t* data, uint64_t length, uint64_t offset);
  Status WriteDirect(const uint8_t* data, size_t length, uint64_t offset);
  Status WriteBuffered(const uint8_t* data, size_t length, uint64_t offset);
  Status Punch(uint64_t offset, uint64_t length);

  const int fd_;
  const std::string name_;
  const Mode mode_;
  const WriteBehindOptions options_;
  UniqueFd direct_fd_;
  uint64_t end_ = 0;
  Buffer* current_ = nullptr;  // being filled by the producer

  mutable std::mutex mu_;
  std::condition_variable to_writer_, to_producer_;
  std::vector<Buffer> buffers_;
  std::deque<Buffer*> queue_;
  Status error_;
  bool closing_ = false;  // Finish: write what is queued, then end
  uint64_t direct_bytes_ = 0, buffered_bytes_ = 0;

  // Writer thread only.
  bool direct_ok_ = true;
  bool punch_ok_ = true;
  WritebackKicker writeback_;
  std::vector<uint8_t> zeros_;
  std::thread thread_;
};

// The encoder's Output (sparse/writer.h) on a WriteBehind: appends, and
// patches of headers written earlier (WriteAt). Like FdOutput, writing
// starts at the descriptor's position and the output is seekable when the
// descriptor is a regular file or block device without O_APPEND; Finish()
// leaves the position after the last byte, as write(2) would have.
class WriteBehindOutput : public Output {
 public:
  // Does not own `fd`.
  WriteBehindOutput(int fd, std::string name, WriteBehindOptions options = {});
  Status Write(std::span<const uint8_t> a, std::span<const uint8_t> b = {}) override;
  bool seekable() const override { return seekable_; }
  Status WriteAt(uint64_t offset, std::span<const uint8_t> data) override;
  // Waits for every byte to be written; returns the first error.
  Status Finish();

  const WriteBehind& writer() const { return *writer_; }

 private:
  int fd_;
  std::string name_;
  bool seekable_ = false;
  uint64_t base_ = 0;  // the descriptor's position when we started
  uint64_t pos_ = 0;   // bytes appended
  std::unique_ptr<WriteBehind> writer_;
};

}  // namespace flashpipe::sparse
