#include "base/buffer_stock.h"

#include <cstring>

namespace flashpipe {

AlignedBuffer BufferStock::Take(size_t size, size_t alignment) {
  size_t rounded = (size + alignment - 1) / alignment * alignment;
  {
    std::lock_guard lock(mu_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->alignment != alignment || it->buffer.size() != rounded) continue;
      AlignedBuffer b = std::move(it->buffer);
      kept_.erase(it);
      kept_bytes_ -= b.size();
      ++reused_;
      std::memset(b.data(), 0, b.size());  // the same contract as a fresh one
      return b;
    }
  }
  return AlignedBuffer(size, alignment);
}

void BufferStock::Give(AlignedBuffer buffer, size_t alignment) {
  if (buffer.size() == 0) return;
  std::lock_guard lock(mu_);
  if (kept_bytes_ + buffer.size() > max_bytes_) return;  // freed here
  kept_bytes_ += buffer.size();
  kept_.push_back({std::move(buffer), alignment});
}

size_t BufferStock::kept_bytes() const {
  std::lock_guard lock(mu_);
  return kept_bytes_;
}

size_t BufferStock::reused() const {
  std::lock_guard lock(mu_);
  return reused_;
}

}  // namespace flashpipe
