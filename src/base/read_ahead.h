// ReadAhead: keeps the kernel reading a file ahead of a sequential reader.
//
// A reader that takes a file front to back in pieces calls At(pos) before
// each read. Whenever less than half a window is already asked for beyond
// pos, ReadAhead asks the kernel (POSIX_FADV_WILLNEED) for everything up to
// pos + window, so the disk reads what comes next while the reader waits on
// something else (the writer's device queue). Without it a cold input is read
// by the reader's own pread calls, one after the other, and the device queue
// runs dry during each; the kernel's own read-ahead helps only as far as the
// disk's read_ahead_kb (128 KiB by default).
//
// The pages go to the page cache, not to the process: its memory stays what
// it was. Advice only: when the kernel ignores it (a pipe, a filesystem
// without read-ahead) reads are as they were, never wrong.
// Thread-compatible.
#pragma once

#include <cstdint>

namespace flashpipe {

class ReadAhead {
 public:
  static constexpr uint64_t kDefaultWindow = uint64_t{32} << 20;
  // A reader hands bytes on in pieces no larger than this, calling At()
  // before each, so a window is renewed inside one long range.
  static constexpr uint64_t kPiece = kDefaultWindow / 4;

  // `end`: where reading stops (the file size, or the end of a range).
  ReadAhead(int fd, uint64_t end, uint64_t window = kDefaultWindow) : fd_(fd), end_(end), window_(window) {}

  // The reader is about to read at pos. A jump backwards, or forwards past
  // what was asked for, starts a new window at pos.
  void At(uint64_t pos);

  // Asked for so far: [asked_from(), asked_to()). For tests.
  uint64_t asked_from() const { return from_; }
  uint64_t asked_to() const { return to_; }
  unsigned calls() const { return calls_; }

 private:
  int fd_;
  uint64_t end_;
  uint64_t window_;
  uint64_t from_ = 0, to_ = 0;
  unsigned calls_ = 0;
};

}  // namespace flashpipe
