// The unit-level model of a device with a volatile write cache, for the
// power-cut harness without the VM (header-only, links flashpipe_powercut).
// Each device keeps the medium as the product sees it (what reads return)
// and records, as dm-log-writes would, every write and every flush into a
// powercut::WriteLog; powercut::RunHarness then rebuilds every state a power
// cut can leave -- the writes since the last flush lost, reordered or torn --
// and runs the same checkers as the VM test.
//
//   std::vector<uint8_t> disk(8 << 20);
//   powercut::WriteLog log;
//   testing::RecordingQueue q(&disk, &log);        // for Storage / the engine
//   testing::RecordingBlockIo io(&disk, base, size, &log);  // for lp
//   auto before = disk;  ...run...; log.AddMark("step 1"); auto snap1 = disk;
//
// Writes are recorded in whole 512-byte sectors: a write that covers part of
// one (lp metadata through the page cache) records the sector as the medium
// then holds it, as the block layer would write the page. Completions come
// in submission order; the reordering is the harness's.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "io/io_queue.h"
#include "lp/block_io.h"
#include "powercut/write_log.h"

namespace flashpipe::testing {

// Records bytes [offset, offset + length) of `medium` as one write, widened
// to whole sectors.
inline void RecordSectors(const std::vector<uint8_t>& medium, uint64_t offset, uint64_t length,
                          powercut::WriteLog* log) {
  const uint64_t ss = log->sector_size();
  const uint64_t first = offset / ss * ss, end = std::min<uint64_t>((offset + length + ss - 1) / ss * ss, medium.size());
  log->AddWrite(first, std::span(medium).subspan(first, end - first));
}

class RecordingBlockIo final : public lp::BlockIo {
 public:
  RecordingBlockIo(std::vector<uint8_t>* medium, uint64_t base, uint64_t size, powercut::WriteLog* log)
      : medium_(medium), base_(base), size_(size), log_(log) {}
  std::string_view name() const override { return "super"; }
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    FP_RETURN_IF_ERROR(lp::CheckRange("super", size_, offset, out.size()));
    std::memcpy(out.data(), medium_->data() + base_ + offset, out.size());
    return Status::Ok();
  }
  Status Write(uint64_t offset, std::span<const uint8_t> data) override {
    FP_RETURN_IF_ERROR(lp::CheckRange("super", size_, offset, data.size()));
    std::memcpy(medium_->data() + base_ + offset, data.data(), data.size());
    RecordSectors(*medium_, base_ + offset, data.size(), log_);
    return Status::Ok();
  }
  // drop_syncs: a deliberately broken device user that never flushes.
  Status Sync() override {
    if (!drop_syncs_) log_->AddFlush();
    return Status::Ok();
  }
  void DropSyncs(bool on) { drop_syncs_ = on; }

 private:
  std::vector<uint8_t>* medium_;
  uint64_t base_, size_;
  powercut::WriteLog* log_;
  bool drop_syncs_ = false;
};

class RecordingQueue final : public io::IoQueue {
 public:
  RecordingQueue(std::vector<uint8_t>* medium, powercut::WriteLog* log, unsigned depth = 4)
      : medium_(medium), log_(log), depth_(depth) {}
  std::string_view name() const override { return "recording"; }
  unsigned depth() const override { return depth_; }
  unsigned in_flight() const override { return static_cast<unsigned>(done_.size()); }
  Status Submit(const io::IoOp& op) override {
    done_.push_back({op.tag, Run(op)});
    return Status::Ok();
  }
  Result<io::IoCompletion> Wait() override {
    io::IoCompletion c = std::move(done_.front());
    done_.pop_front();
    return c;
  }
  Status Sync() override {
    if (!drop_syncs_) log_->AddFlush();
    return Status::Ok();
  }
  void DropSyncs(bool on) { drop_syncs_ = on; }

 private:
  Status Run(const io::IoOp& op) {
    if (op.offset > medium_->size() || op.length > medium_->size() - op.offset) {
      return IoError("recording queue: op beyond the end of the medium", EIO);
    }
    uint8_t* at = medium_->data() + op.offset;
    switch (op.kind) {
      case io::OpKind::kRead:
        std::memcpy(op.buf, at, op.length);
        return Status::Ok();
      case io::OpKind::kWrite:
        std::memcpy(at, op.buf, op.length);
        break;
      case io::OpKind::kZeroOut:
      case io::OpKind::kDiscard:
      case io::OpKind::kPunchHole:
        std::memset(at, 0, op.length);
        break;
    }
    RecordSectors(*medium_, op.offset, op.length, log_);
    return Status::Ok();
  }

  std::vector<uint8_t>* medium_;
  powercut::WriteLog* log_;
  unsigned depth_;
  bool drop_syncs_ = false;
  std::deque<io::IoCompletion> done_;
};

}  // namespace flashpipe::testing
