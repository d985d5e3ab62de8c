// FaultQueue: an IoQueue that wraps another and injects failures, for tests
// of the engine's error paths (header-only, links only flashpipe_io).
//
//   testing::FaultQueue q(inner.get());
//   q.FailWrites(/*after_bytes=*/1 << 20, EIO);   // writes past 1 MiB fail
//   q.ShortWrites(512);        // each write moves at most 512 bytes per call,
//                              // the rest is resubmitted like a real short write
//   q.FailSync(EIO);
//   q.Corrupt(offset, len)     // flips bytes on the medium after the write
//
// Failures are reported through completions (or Sync's Status) exactly as a
// real backend reports them, so the writer cannot tell the difference.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <deque>
#include <functional>
#include <string>

#include "base/status.h"
#include "io/io_queue.h"

namespace flashpipe::testing {

class FaultQueue final : public io::IoQueue {
 public:
  explicit FaultQueue(io::IoQueue* inner) : inner_(inner) {}

  // Any write that ends beyond absolute offset `after` fails with `err`
  // (EIO, ENOSPC) -- like a device that breaks or fills up there.
  void FailWrites(uint64_t after, int err) { fail_after_ = after; fail_errno_ = err; }
  void FailReads(uint64_t after, int err) { read_fail_after_ = after; read_errno_ = err; }
  void FailSync(int err) { sync_errno_ = err; }
  // Sees every op before it is submitted (or failed).
  void OnSubmit(std::function<void(const io::IoOp&)> f) { on_submit_ = std::move(f); }
  // Runs before each Sync: tests corrupt the medium here, after the writes
  // and before the writer's verify pass.
  void BeforeSync(std::function<void()> f) { before_sync_ = std::move(f); }
  // Splits every write into pieces of at most `max` bytes submitted one after
  // the other, the way a queue finishes a short write.
  void ShortWrites(uint64_t max) { short_max_ = max; }
  // Fails the op kind (zeroout, discard, punch) with `err` (e.g. EOPNOTSUPP).
  void FailKind(io::OpKind kind, int err) { fail_kind_ = kind; fail_kind_errno_ = err; fail_kind_on_ = true; }

  uint64_t writes() const { return writes_; }
  uint64_t max_end_written() const { return max_end_; }
  uint64_t min_offset_written() const { return min_offset_; }

  std::string_view name() const override { return "fault"; }
  unsigned depth() const override { return inner_->depth(); }
  unsigned in_flight() const override { return inner_->in_flight() + static_cast<unsigned>(failed_.size()); }

  Status Submit(const io::IoOp& op) override {
    if (on_submit_) on_submit_(op);
    if (op.kind == io::OpKind::kWrite) {
      ++writes_;
      max_end_ = std::max(max_end_, op.offset + op.length);
      min_offset_ = std::min(min_offset_, op.offset);
    }
    if (int e = Injected(op)) {
      failed_.push_back({op.tag, IoError(fmt::format("injected fault on 0x{:x}+{}", op.offset, op.length), e)});
      return Status::Ok();
    }
    if (op.kind == io::OpKind::kWrite && short_max_ > 0 && op.length > short_max_) {
      // Do it as a chain of small synchronous pieces through the inner queue.
      for (uint64_t done = 0; done < op.length; done += short_max_) {
        io::IoOp piece = op;
        piece.offset += done;
        piece.buf += done;
        piece.length = std::min(short_max_, op.length - done);
        piece.tag = kPieceTag;
        FP_RETURN_IF_ERROR(inner_->Submit(piece));
        Status st = WaitPiece();
        if (!st.ok()) {
          failed_.push_back({op.tag, st});
          return Status::Ok();
        }
      }
      failed_.push_back({op.tag, Status::Ok()});
      return Status::Ok();
    }
    return inner_->Submit(op);
  }
  Result<io::IoCompletion> Wait() override {
    if (!failed_.empty()) {
      io::IoCompletion c = std::move(failed_.front());
      failed_.pop_front();
      return c;
    }
    return inner_->Wait();
  }
  Status Sync() override {
    if (before_sync_) before_sync_();
    if (sync_errno_) return IoError("injected fdatasync failure", sync_errno_);
    return inner_->Sync();
  }
  bool RegisterBuffers(std::span<const std::span<uint8_t>> b) override { return inner_->RegisterBuffers(b); }

 private:
  static constexpr uint64_t kPieceTag = ~uint64_t{0};
  // Completions of other ops that arrive meanwhile are kept for Wait().
  Status WaitPiece() {
    for (;;) {
      auto c = inner_->Wait();
      if (!c.ok()) return c.status();
      if (c->tag == kPieceTag) return c->status;
      failed_.push_back(std::move(*c));
    }
  }
  int Injected(const io::IoOp& op) const {
    if (op.kind == io::OpKind::kWrite && op.offset + op.length > fail_after_) return fail_errno_;
    if (op.kind == io::OpKind::kRead && op.offset + op.length > read_fail_after_) return read_errno_;
    if (fail_kind_on_ && op.kind == fail_kind_) return fail_kind_errno_;
    return 0;
  }

  io::IoQueue* inner_;
  uint64_t fail_after_ = UINT64_MAX;
  int fail_errno_ = 0;
  uint64_t read_fail_after_ = UINT64_MAX;
  int read_errno_ = 0;
  int sync_errno_ = 0;
  uint64_t short_max_ = 0;
  bool fail_kind_on_ = false;
  io::OpKind fail_kind_ = io::OpKind::kWrite;
  int fail_kind_errno_ = 0;
  uint64_t writes_ = 0, max_end_ = 0, min_offset_ = UINT64_MAX;
  std::function<void()> before_sync_;
  std::function<void(const io::IoOp&)> on_submit_;
  std::deque<io::IoCompletion> failed_;
};

}  // namespace flashpipe::testing
