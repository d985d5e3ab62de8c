// ThreadQueue: `depth` worker threads run blocking ops (O_DIRECT pwrite,
// pread, ioctls) so that up to `depth` requests overlap without io_uring.
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "io/queues.h"

namespace flashpipe::io {
namespace {

class ThreadQueue final : public IoQueue {
 public:
  ThreadQueue(int fd, unsigned depth) : fd_(fd), depth_(depth ? depth : 1) {
    for (unsigned i = 0; i < depth_; ++i) workers_.emplace_back([this] { Work(); });
  }
  ~ThreadQueue() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  std::string_view name() const override { return "threads"; }
  unsigned depth() const override { return depth_; }
  unsigned in_flight() const override { return in_flight_; }

  Status Submit(const IoOp& op) override {
    if (in_flight_ >= depth_) return Internal("thread queue: submit beyond depth");
    {
      std::lock_guard lock(mu_);
      todo_.push_back(op);
    }
    ++in_flight_;
    work_cv_.notify_one();
    return Status::Ok();
  }
  Result<IoCompletion> Wait() override {
    if (in_flight_ == 0) return Internal("thread queue: wait with nothing in flight");
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [this] { return !done_.empty(); });
    IoCompletion c = std::move(done_.front());
    done_.pop_front();
    --in_flight_;
    return c;
  }
  Status Sync() override {
    if (fdatasync(fd_) != 0) return ErrnoError("fdatasync failed");
    return Status::Ok();
  }

 private:
  void Work() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [this] { return stop_ || !todo_.empty(); });
      if (stop_ && todo_.empty()) return;
      IoOp op = todo_.front();
      todo_.pop_front();
      lock.unlock();
      Status s = RunOpBlocking(fd_, op);
      lock.lock();
      done_.push_back({op.tag, std::move(s)});
      done_cv_.notify_one();
    }
  }

  int fd_;
  unsigned depth_;
  unsigned in_flight_ = 0;  // touched by the submitting thread only
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<IoOp> todo_;
  std::deque<IoCompletion> done_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<IoQueue> MakeThreadQueue(int fd, unsigned depth) {
  return std::make_unique<ThreadQueue>(fd, depth);
}

}  // namespace flashpipe::io
