// UringQueue: io_uring through liburing. One slot per op in flight; the slot
// index is the SQE's user_data, so a short transfer can be resubmitted for the
// rest without the caller noticing.
#include <fcntl.h>
#include <linux/falloc.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <sys/uio.h>
#include <vector>

#include "base/fd_io.h"
#include "io/queues.h"

namespace flashpipe::io {
namespace {

// Tries the cheap-completion flag first and drops it when the kernel refuses
// it (EINVAL), as fio does. SINGLE_ISSUER/DEFER_TASKRUN are not used: callers
// (the fastboot daemon) may create a queue on one thread and use it on another.
int InitRing(unsigned entries, io_uring* ring) {
  io_uring_params p;
  std::memset(&p, 0, sizeof p);
  p.flags = IORING_SETUP_COOP_TASKRUN;
  int r = io_uring_queue_init_params(entries, ring, &p);
  if (r == -EINVAL) {
    std::memset(&p, 0, sizeof p);
    r = io_uring_queue_init_params(entries, ring, &p);
  }
  return r;
}

class UringQueue final : public IoQueue {
 public:
  UringQueue(int fd, unsigned depth, uint64_t async_above)
      : fd_(fd), depth_(depth), async_above_(async_above), slots_(depth) {
    for (unsigned i = 0; i < depth; ++i) free_.push_back(depth - 1 - i);
  }
  ~UringQueue() override {
    // Never free buffers the kernel may still write into.
    while (in_flight_ > 0) {
      io_uring_cqe* cqe;
      if (io_uring_wait_cqe(&ring_, &cqe) != 0) break;
      io_uring_cqe_seen(&ring_, cqe);
      --in_flight_;
    }
    io_uring_queue_exit(&ring_);
  }
  int Init() { return InitRing(depth_, &ring_); }

  std::string_view name() const override { return "io_uring"; }
  unsigned depth() const override { return depth_; }
  unsigned in_flight() const override { return in_flight_; }

  bool RegisterBuffers(std::span<const std::span<uint8_t>> buffers) override {
    std::vector<iovec> iov;
    for (auto b : buffers) iov.push_back({b.data(), b.size()});
    if (registered_) io_uring_unregister_buffers(&ring_);
    registered_ = io_uring_register_buffers(&ring_, iov.data(), iov.size()) == 0;
    return registered_;
  }

  Status Submit(const IoOp& op) override {
    if (free_.empty()) return Internal("io_uring queue: submit beyond depth");
    if (op.kind == OpKind::kDiscard) return SubmitBlocking(op);
    unsigned slot = free_.back();
    free_.pop_back();
    slots_[slot] = {op, 0};
    ++in_flight_;
    Status st = Issue(slot);
    if (!st.ok()) {
      free_.push_back(slot);
      --in_flight_;
    }
    return st;
  }

  Result<IoCompletion> Wait() override {
    if (in_flight_ == 0) return Internal("io_uring queue: wait with nothing in flight");
    if (!ready_.empty()) return PopReady();
    for (;;) {
      io_uring_cqe* cqe;
      int r = RetryOnNegativeEintr([&] { return io_uring_wait_cqe(&ring_, &cqe); });
      if (r < 0) return IoError("io_uring_wait_cqe failed", -r);
      unsigned slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      std::optional<IoCompletion> done = Complete(slot, res);
      if (done) return std::move(*done);
    }
  }

  Status Sync() override {
    if (fdatasync(fd_) != 0) return ErrnoError("fdatasync failed");
    return Status::Ok();
  }

 private:
  struct Slot {
    IoOp op;
    uint64_t done = 0;  // bytes already transferred
  };

  // Ops io_uring cannot do here run at once; the completion waits in ready_
  // and keeps its slot until Wait hands it out, so depth stays honest.
  Status SubmitBlocking(const IoOp& op) {
    unsigned slot = free_.back();
    free_.pop_back();
    ++in_flight_;
    ready_.push_back({slot, {op.tag, RunOpBlocking(fd_, op)}});
    return Status::Ok();
  }
  Result<IoCompletion> PopReady() {
    auto [slot, c] = std::move(ready_.front());
    ready_.erase(ready_.begin());
    free_.push_back(slot);
    --in_flight_;
    return std::move(c);
  }

  Status Issue(unsigned slot) {
    Slot& s = slots_[slot];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return Internal("io_uring: no free SQE");
    const IoOp& op = s.op;
    uint8_t* buf = op.buf + s.done;
    uint64_t off = op.offset + s.done;
    unsigned len = static_cast<unsigned>(op.length - s.done);
    bool fixed = registered_ && op.buf_index >= 0;
    switch (op.kind) {
      case OpKind::kWrite:
        if (fixed) io_uring_prep_write_fixed(sqe, fd_, buf, len, off, op.buf_index);
        else io_uring_prep_write(sqe, fd_, buf, len, off);
        break;
      case OpKind::kRead:
        if (fixed) io_uring_prep_read_fixed(sqe, fd_, buf, len, off, op.buf_index);
        else io_uring_prep_read(sqe, fd_, buf, len, off);
        break;
      case OpKind::kZeroOut:
        io_uring_prep_fallocate(sqe, fd_, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
                                static_cast<off_t>(op.offset), static_cast<off_t>(op.length));
        break;
      case OpKind::kPunchHole:
        io_uring_prep_fallocate(sqe, fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                static_cast<off_t>(op.offset), static_cast<off_t>(op.length));
        break;
      case OpKind::kDiscard:
        return Internal("io_uring: discard is synchronous");
    }
    bool transfer = op.kind == OpKind::kWrite || op.kind == OpKind::kRead;
    if (transfer && async_above_ > 0 && len > async_above_) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, slot);
    int r = io_uring_submit(&ring_);
    if (r < 0) return IoError(DescribeOp(op) + ": io_uring_submit failed", -r);
    return Status::Ok();
  }

  // Returns the completion when the op is finished, nothing when the rest of
  // a short transfer was resubmitted.
  std::optional<IoCompletion> Complete(unsigned slot, int res) {
    Slot& s = slots_[slot];
    const IoOp& op = s.op;
    Status status;
    bool transfer = op.kind == OpKind::kWrite || op.kind == OpKind::kRead;
    bool zeroing = op.kind == OpKind::kZeroOut || op.kind == OpKind::kPunchHole;
    if (res < 0 && zeroing && (res == -EOPNOTSUPP || res == -EINVAL)) {
      status = RunOpBlocking(fd_, op);  // BLKZEROOUT, or zeros written by hand
    } else if (res < 0) {
      status = IoError(DescribeOp(op) + fmt::format(" failed at byte 0x{:x}", op.offset + s.done), -res);
    } else if (transfer) {
      s.done += static_cast<uint64_t>(res);
      if (s.done < op.length && res == 0 && op.kind == OpKind::kRead) {
        std::memset(op.buf + s.done, 0, op.length - s.done);  // end of file
      } else if (s.done < op.length && res == 0) {
        status = NoSpace(DescribeOp(op) + fmt::format(": no progress at byte 0x{:x}", op.offset + s.done));
      } else if (s.done < op.length) {
        Status st = Issue(slot);
        if (st.ok()) return std::nullopt;
        status = st;
      }
    }
    free_.push_back(slot);
    --in_flight_;
    return IoCompletion{op.tag, std::move(status)};
  }

  int fd_;
  unsigned depth_;
  uint64_t async_above_;  // reads/writes longer than this: IOSQE_ASYNC (0: never)
  io_uring ring_{};
  bool registered_ = false;
  std::vector<Slot> slots_;
  std::vector<unsigned> free_;
  std::vector<std::pair<unsigned, IoCompletion>> ready_;
  unsigned in_flight_ = 0;
};

}  // namespace

Status ProbeUring() {
  static std::once_flag once;
  static Status result;
  std::call_once(once, [] {
    io_uring ring;
    int r = InitRing(2, &ring);
    if (r == 0) {
      io_uring_queue_exit(&ring);
      return;
    }
    const char* why = r == -ENOSYS ? "not supported by this kernel"
                      : r == -EPERM ? "refused (kernel.io_uring_disabled or a seccomp profile)"
                                    : "setup failed";
    result = IoError(std::string("io_uring ") + why, -r);
  });
  return result;
}

Result<std::unique_ptr<IoQueue>> MakeUringQueue(int fd, unsigned depth, uint64_t async_above) {
  auto q = std::make_unique<UringQueue>(fd, depth ? depth : 1, async_above);
  int r = q->Init();
  if (r < 0) return IoError("io_uring setup failed", -r);
  return std::unique_ptr<IoQueue>(std::move(q));
}

}  // namespace flashpipe::io
