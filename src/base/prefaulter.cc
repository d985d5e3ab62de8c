#include "base/prefaulter.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; an older kernel says EINVAL
#endif

namespace flashpipe {
namespace {

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

bool Prefaulter::Populate(void* data, uint64_t size) {
  return size == 0 || ::madvise(data, size, MADV_POPULATE_WRITE) == 0;
}

bool Prefaulter::Supported() {
  static const bool supported = [] {
    void* p = ::mmap(nullptr, PageSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    bool ok = Populate(p, PageSize());
    ::munmap(p, PageSize());
    return ok;
  }();
  return supported;
}

Prefaulter::Prefaulter(std::span<uint8_t> region, Options options)
    : begin_(region.data()), size_(region.size()), options_(options) {
  // Whole pages only: the first at or after the start, the last before the end.
  uint64_t page = PageSize();
  uint64_t base = reinterpret_cast<uintptr_t>(begin_);
  uint64_t first = (base + page - 1) / page * page - base;
  uint64_t last = (base + size_) / page * page - base;
  cursor_ = std::min(first, size_);
  size_ = std::max(last, cursor_);
  options_.step = std::max<uint64_t>(options_.step / page * page, page);
  thread_ = std::thread([this] { Run(); });
}

Prefaulter::~Prefaulter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Prefaulter::Advance(uint64_t filled) {
  std::lock_guard lock(mu_);
  filled_ = std::max(filled_, filled);
  if (waiting_ && filled_ >= wake_at_) {
    waiting_ = false;  // WaitIdle() waits until the thread waits again
    cv_.notify_one();
  }
}

void Prefaulter::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return waiting_ || stopped_; });
}

uint64_t Prefaulter::populated() const {
  std::lock_guard lock(mu_);
  return cursor_;
}

uint64_t Prefaulter::skipped() const {
  std::lock_guard lock(mu_);
  return skipped_;
}

bool Prefaulter::stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

void Prefaulter::Run() {
  const uint64_t page = PageSize();
  const uint64_t base = reinterpret_cast<uintptr_t>(begin_);
  std::unique_lock lock(mu_);
  while (!stop_ && filled_ < size_) {
    // Never behind the receiver. Overtaken, it goes on a step past the
    // receiver's page: the receiver faults that step itself meanwhile,
    // rather than both faulting (and zeroing) the same pages.
    uint64_t at_receiver = (base + filled_) / page * page;  // an address: the region may start off a page
    if (at_receiver > base + cursor_) {
      uint64_t to = std::min(at_receiver - base + options_.step, size_);
      skipped_ += to - cursor_;
      cursor_ = to;
    }
    if (cursor_ >= size_) break;
    uint64_t end = std::min(size_, cursor_ + options_.step);
    if (end > filled_ + options_.ahead) {  // far enough ahead: wait for a step's room
      wake_at_ = end - options_.ahead;
      waiting_ = true;
      idle_cv_.notify_all();
      cv_.wait(lock, [this] { return stop_ || !waiting_; });
      waiting_ = false;
      continue;
    }
    uint8_t* from = begin_ + cursor_;
    lock.unlock();
    bool ok = Populate(from, end - cursor_);  // cursor_ changes on this thread only
    lock.lock();
    if (!ok) break;  // no kernel support (or no memory): the receiver faults
    cursor_ = end;
  }
  waiting_ = false;
  stopped_ = true;
  idle_cv_.notify_all();
}

}  // namespace flashpipe
