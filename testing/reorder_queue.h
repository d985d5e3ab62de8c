// ReorderQueue: an IoQueue that performs ops only when they complete, in a
// random order -- the worst a real device may do within the queue depth. A
// writer that lets two overlapping writes be in flight at once, or reads a
// block while a write to it is pending, produces wrong content on it
// (header-only, links only flashpipe_io).
#pragma once

#include <unistd.h>

#include <random>
#include <vector>

#include "io/queues.h"

namespace flashpipe::testing {

class ReorderQueue final : public io::IoQueue {
 public:
  ReorderQueue(int fd, unsigned depth, uint64_t seed) : fd_(fd), depth_(depth), rng_(seed) {}
  std::string_view name() const override { return "reorder"; }
  unsigned depth() const override { return depth_; }
  unsigned in_flight() const override { return static_cast<unsigned>(pending_.size()); }
  Status Submit(const io::IoOp& op) override {
    if (pending_.size() >= depth_) return Internal("reorder queue: submit beyond depth");
    pending_.push_back(op);
    return Status::Ok();
  }
  Result<io::IoCompletion> Wait() override {
    if (pending_.empty()) return Internal("reorder queue: nothing in flight");
    size_t i = rng_() % pending_.size();
    io::IoOp op = pending_[i];
    pending_.erase(pending_.begin() + static_cast<long>(i));
    return io::IoCompletion{op.tag, io::RunOpBlocking(fd_, op)};
  }
  Status Sync() override {
    if (!pending_.empty()) return Internal("reorder queue: sync with ops in flight");
    return fdatasync(fd_) == 0 ? Status::Ok() : ErrnoError("fdatasync");
  }

 private:
  int fd_;
  unsigned depth_;
  std::mt19937_64 rng_;
  std::vector<io::IoOp> pending_;
};

}  // namespace flashpipe::testing
