// SyncQueue: every op runs to completion inside Submit; Wait hands back the
// results in order. The blocking reference the benchmarks compare against.
#include <unistd.h>

#include <deque>

#include "io/queues.h"

namespace flashpipe::io {
namespace {

class SyncQueue final : public IoQueue {
 public:
  SyncQueue(int fd, unsigned depth) : fd_(fd), depth_(depth ? depth : 1) {}
  std::string_view name() const override { return "sync"; }
  unsigned depth() const override { return depth_; }
  unsigned in_flight() const override { return static_cast<unsigned>(done_.size()); }

  Status Submit(const IoOp& op) override {
    if (done_.size() >= depth_) return Internal("sync queue: submit beyond depth");
    done_.push_back({op.tag, RunOpBlocking(fd_, op)});
    return Status::Ok();
  }
  Result<IoCompletion> Wait() override {
    if (done_.empty()) return Internal("sync queue: wait with nothing in flight");
    IoCompletion c = std::move(done_.front());
    done_.pop_front();
    return c;
  }
  Status Sync() override {
    if (fdatasync(fd_) != 0) return ErrnoError("fdatasync failed");
    return Status::Ok();
  }

 private:
  int fd_;
  unsigned depth_;
  std::deque<IoCompletion> done_;
};

}  // namespace

std::unique_ptr<IoQueue> MakeSyncQueue(int fd, unsigned depth) {
  return std::make_unique<SyncQueue>(fd, depth);
}

}  // namespace flashpipe::io
