// Prefaulter: makes the pages of a region present on its own thread, a
// bounded distance ahead of a receiver that fills the region in order, so
// that the receiver (a download landing in a fresh buffer) does not pay the
// page faults itself. Without it the first download into a daemon's buffer
// faulted every page on the receiving thread; prefaulting the whole buffer at
// start instead holds all of it from the start (serve --prefault).
//
// The thread populates the region in steps of `step` bytes with
// madvise(MADV_POPULATE_WRITE) (Linux >= 5.14), starting at the region's
// first page and never at a page the receiver has already passed (Advance;
// overtaken, it goes on a step past the receiver, which faults that step
// itself, so that the two do not fault the same pages): it stays at most
// `ahead` + `step` bytes in front of the receiver, and never touches a
// byte past the region's end. MADV_POPULATE_WRITE changes no
// byte (a present page is left alone, a missing one comes in as zeros
// exactly as the receiver's own write fault would bring it), so the thread
// may overlap bytes the receiver is writing: nothing is lost, whoever comes
// first. Where the kernel lacks it (EINVAL), the thread does nothing and the
// receiver faults as before: touching pages by hand is not safe beside a
// concurrent writer (a read-then-write of a byte could undo the receiver's).
//
// It stops once it reaches the end, once the receiver does (Advance to the
// end), or on destruction, which waits for at most the step in progress.
// A region that does not start on a page starts at its first whole page.
// The region must stay mapped for the Prefaulter's lifetime. Advance and the
// accessors are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <thread>

namespace flashpipe {

class Prefaulter {
 public:
  struct Options {
    uint64_t step = 8u << 20;    // bytes per madvise call
    uint64_t ahead = 64u << 20;  // how far in front of the receiver to stay
  };

  // Starts the thread on `region`.
  explicit Prefaulter(std::span<uint8_t> region) : Prefaulter(region, Options{}) {}
  Prefaulter(std::span<uint8_t> region, Options options);
  ~Prefaulter();
  Prefaulter(const Prefaulter&) = delete;
  Prefaulter& operator=(const Prefaulter&) = delete;

  // The receiver has filled the region's first `filled` bytes (offsets from
  // the region's start; never decreasing; past the end means done).
  void Advance(uint64_t filled);
  // Blocks until the thread has nothing to do now: it waits for the
  // receiver, or it has stopped. For tests and logs.
  void WaitIdle();
  // Bytes from the region's start up to which the thread has populated
  // (pages the receiver passed first are counted, see skipped()).
  uint64_t populated() const;
  // Of those, the bytes skipped because the receiver got there first.
  uint64_t skipped() const;
  // The thread has stopped: at the end, the receiver at the end, or no
  // kernel support.
  bool stopped() const;

  // Whether this kernel has MADV_POPULATE_WRITE (probed once).
  static bool Supported();
  // madvise(MADV_POPULATE_WRITE) over [data, data + size): true on success.
  // REQUIRES: data on a page boundary.
  static bool Populate(void* data, uint64_t size);

 private:
  void Run();

  uint8_t* begin_;
  uint64_t size_;
  Options options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;       // the thread waits here for the receiver
  std::condition_variable idle_cv_;  // WaitIdle waits here for the thread
  uint64_t filled_ = 0;
  uint64_t cursor_ = 0;              // the next byte to populate
  uint64_t skipped_ = 0;
  uint64_t wake_at_ = UINT64_MAX;    // filled_ the waiting thread needs
  bool waiting_ = false;
  bool stop_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace flashpipe
