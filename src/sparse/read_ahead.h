// ReadAhead: reads the input of a converter ahead of it, on threads of its
// own, so that scanning or decoding one buffer overlaps reading the next.
//
// What is read: a seekable file or block device as a sequence of byte
// ranges, given one at a time by a RangeSource (img2simg: the whole file;
// img2simg -s: its data extents; simg2img: the rest of the file), or a
// stream (pipe, socket, terminal) from where it stands to end of file.
// Next() hands the bytes out in order, as pieces of at most buffer_size bytes
// that never span two ranges. A range ends early at end of file.
//
// How: `threads` threads each read one piece at a time into a fixed ring of
// `buffers` buffers, so while the consumer works on one piece up to
// `threads` requests of buffer_size bytes are with the device. A stream, and
// a file that cannot be opened with O_DIRECT, get one thread: readers that
// take turns through the page cache look random to the kernel's read-ahead,
// which then reads in small requests (3 such threads read a cold file at a
// fifth of the speed of one).
// A range that is not in the page cache (cachestat(2)) is read with O_DIRECT
// through a second descriptor opened on /proc/self/fd/N: large requests
// straight to the device, no copy, no page cache filled and evicted; a cached
// range is read from the cache at memory speed, and a file whose filesystem
// refuses O_DIRECT, or a piece not aligned for it, is read through the cache.
//
// Errors: a failed read (or a failed RangeSource) is returned by Next() in
// the place of its piece, after every piece before it, with the input's name
// and byte offset. The consumer may stop at any time: destroying the
// ReadAhead stops the threads once their current read returns.
// Memory: buffers * buffer_size, allocated once, plus a thread stack each.
// Next() is for one consumer thread at a time.
//
//   ReadAhead in(fd, "in.img", ReadAhead::OneRange(0, ReadAhead::kToEof));
//   for (;;) {
//     FP_ASSIGN_OR_RETURN(ReadAhead::Piece p, in.Next());
//     if (p.data.empty()) break;  // the end
//     ... use p.offset, p.data until the next call ...
//   }
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"
#include "sparse/pipe_buffer.h"

namespace flashpipe::sparse {

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Called on a reader thread, one call at a time: the next range to read, or
// nullopt when there is none left.
using RangeSource = std::function<Result<std::optional<ByteRange>>()>;

struct ReadAheadOptions {
  size_t buffer_size = size_t{4} << 20;  // a multiple of 4096
  int buffers = 6;                       // > threads, so one is left for the consumer
  int threads = 3;                       // 1 without O_DIRECT (see above)
  bool direct = true;                    // O_DIRECT where it pays (see above)
};

class ReadAhead {
 public:
  static constexpr uint64_t kToEof = UINT64_MAX;
  struct Piece {
    uint64_t offset = 0;              // byte offset in the input
    std::span<const uint8_t> data;    // empty: there is no more
  };

  // A seekable input (pread), read in the ranges `ranges` gives. Does not
  // own `fd`, which must outlive the ReadAhead.
  ReadAhead(int fd, std::string name, RangeSource ranges, ReadAheadOptions options = {});
  // A stream read with read(2) from its current position to end of file;
  // `position` is the offset reported for its first byte.
  static std::unique_ptr<ReadAhead> Stream(int fd, std::string name, uint64_t position,
                                           ReadAheadOptions options = {});
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The next piece in order. The previous piece's memory is reused from now.
  Result<Piece> Next();

  // A RangeSource of one range (length kToEof: to end of file).
  static RangeSource OneRange(uint64_t offset, uint64_t length);

  // How pieces were read so far, for tests and -v output.
  uint64_t direct_bytes() const;
  uint64_t cached_bytes() const;

 private:
  struct Slot {
    PipeBuffer buf;
    enum class State { kFree, kReading, kReady } state = State::kFree;
    uint64_t seq = 0;
    uint64_t range = 0;   // index of its range
    uint64_t offset = 0;
    size_t want = 0;
    size_t got = 0;
    Status status;
  };
  struct Claim {
    Slot* slot = nullptr;
    bool end = false;  // nothing left to claim
  };

  ReadAhead(int fd, std::string name, RangeSource ranges, bool stream, ReadAheadOptions options);
  void Run();
  Claim ClaimLocked();
  bool NextRangeLocked(Slot& free);
  void Read(Slot& slot);
  Status ReadStream(Slot& slot);
  Status ReadFile(Slot& slot);
  bool WantDirect(uint64_t offset, size_t length);

  const int fd_;
  const std::string name_;
  RangeSource ranges_;
  const bool stream_;
  const ReadAheadOptions options_;
  UniqueFd direct_fd_;  // O_DIRECT descriptor of the same file, when it could be opened

  mutable std::mutex mu_;
  std::condition_variable to_readers_, to_consumer_;
  std::vector<Slot> slots_;
  uint64_t next_claim_ = 0;     // seq of the next piece to claim
  uint64_t next_out_ = 0;       // seq of the next piece Next() returns
  Slot* lent_ = nullptr;        // the piece the consumer holds
  std::optional<ByteRange> range_;  // being claimed: what is left of it
  uint64_t range_index_ = 0;
  uint64_t dropped_range_ = 0;  // Next(): a range that ended at end of file (indices start at 1)
  uint64_t end_ = 0;            // Next(): the offset after the last piece
  Status failed_;               // Next(): the first error, returned from then on
  bool sources_done_ = false;   // no range left (or the source or a read failed)
  bool stop_ = false;
  bool direct_ok_ = true;
  uint64_t direct_bytes_ = 0, cached_bytes_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace flashpipe::sparse
