// PipeBuffer: the memory of the converters' read-ahead and write-behind
// rings (sparse/read_ahead.h, sparse/write_behind.h).
//
// Aligned to 2 MiB and offered to the kernel for transparent huge pages, so
// that filling it costs one page fault per 2 MiB instead of one per 4 KiB
// (on some VMs a fault costs tens of microseconds: 8 MiB of 4 KiB pages is
// tens of milliseconds). Not zeroed: pages are touched by whoever fills them
// first, the reader or writer thread. Aligned enough for O_DIRECT. Move-only.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace flashpipe::sparse {

class PipeBuffer {
 public:
  static constexpr size_t kAlignment = size_t{2} << 20;

  PipeBuffer() = default;
  explicit PipeBuffer(size_t size) : size_(size) {
    void* p = nullptr;
    if (size == 0) return;
    if (posix_memalign(&p, kAlignment, size) != 0) throw std::bad_alloc();
    ::madvise(p, size, MADV_HUGEPAGE);  // a hint: fails harmlessly where THP is off
    data_ = static_cast<uint8_t*>(p);
  }
  PipeBuffer(PipeBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  PipeBuffer& operator=(PipeBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~PipeBuffer() { std::free(data_); }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace flashpipe::sparse
