#include "base/aligned_buffer.h"

#include <cstring>
#include <new>

namespace flashpipe {

AlignedBuffer::AlignedBuffer(size_t size, size_t alignment) {
  size_ = (size + alignment - 1) / alignment * alignment;
  if (size_ == 0) return;
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size_) != 0) throw std::bad_alloc();
  std::memset(p, 0, size_);
  data_ = static_cast<uint8_t*>(p);
}

}  // namespace flashpipe
