// BufferStock: aligned buffers kept between users, so that a daemon which
// creates a writer per flash does not map, fault in and zero fresh memory
// each time (on some VMs a page fault costs tens of microseconds).
//
// Take() returns a zeroed buffer of at least `size` bytes (rounded up to the
// alignment), reusing a kept one of the same rounded size and alignment when
// there is one; Give() keeps a buffer for later, up to `max_bytes` in all
// (beyond that it is freed). Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "base/aligned_buffer.h"

namespace flashpipe {

class BufferStock {
 public:
  explicit BufferStock(size_t max_bytes) : max_bytes_(max_bytes) {}

  AlignedBuffer Take(size_t size, size_t alignment);
  void Give(AlignedBuffer buffer, size_t alignment);

  size_t kept_bytes() const;
  size_t reused() const;  // Take() calls served from the stock

 private:
  struct Kept {
    AlignedBuffer buffer;
    size_t alignment;
  };
  mutable std::mutex mu_;
  size_t max_bytes_;
  size_t kept_bytes_ = 0;
  size_t reused_ = 0;
  std::vector<Kept> kept_;
};

}  // namespace flashpipe
