// MemoryBlockIo: an lp::BlockIo held in memory, with the faults a crash can
// cause, for the lp tests (header-only, links only flashpipe_lp).
//
//   testing::MemoryBlockIo dev(1 << 20);
//   dev.TearWrite(3);            // the 3rd write from now is torn and fails;
//                                // every call after it fails (power is gone)
//   dev.FailSync(2);             // or: the 2nd sync from now fails, likewise
//   Status s = lp::UpdateMetadata(dev, m, 0);
//   auto after = dev.AfterCrash(/*keep_unsynced=*/false);
//
// A write lands in a list of unsynced writes that reads see; Sync makes them
// durable. A crash decides the fate of each unsynced write on its own: lost,
// torn (its first half down, the rest of its range 0xA5 -- worse than a real
// device, whose sectors are old or new) or landed; AfterCrash(fates) is the
// medium it leaves. AfterCrash(keep_unsynced) is the simple case: all lost,
// or all landed except the failed write, torn.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "lp/block_io.h"

namespace flashpipe::testing {

class MemoryBlockIo final : public lp::BlockIo {
 public:
  explicit MemoryBlockIo(uint64_t size, std::string name = "memory") : durable_(size, 0), name_(std::move(name)) {}
  MemoryBlockIo(std::vector<uint8_t> bytes, std::string name) : durable_(std::move(bytes)), name_(std::move(name)) {}

  std::string_view name() const override { return name_; }
  uint64_t size() const override { return durable_.size(); }

  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    FP_RETURN_IF_ERROR(lp::CheckRange(name_, size(), offset, out.size()));
    if (failed_) return IoError("read after a failure", EIO);
    std::memcpy(out.data(), durable_.data() + offset, out.size());
    for (const auto& w : pending_) {  // what overlaps the range, in order
      const uint64_t from = std::max(offset, w.offset);
      const uint64_t to = std::min(offset + out.size(), w.offset + w.bytes.size());
      if (from < to) std::memcpy(out.data() + (from - offset), w.bytes.data() + (from - w.offset), to - from);
    }
    ++reads_;
    return Status::Ok();
  }

  Status Write(uint64_t offset, std::span<const uint8_t> data) override {
    FP_RETURN_IF_ERROR(lp::CheckRange(name_, size(), offset, data.size()));
    if (failed_) return IoError("write after a failure", EIO);
    ++writes_;
    pending_.push_back({offset, std::vector<uint8_t>(data.begin(), data.end())});
    if (writes_ == tear_at_) {
      failed_ = true;
      return IoError(fmt::format("write {} torn", writes_), EIO);
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (failed_) return IoError("sync after a failure", EIO);
    if (syncs_ + 1 == fail_sync_at_) {  // nothing made durable; the writes' fates are open
      failed_ = true;
      return IoError(fmt::format("sync {} failed", syncs_ + 1), EIO);
    }
    for (const auto& w : pending_) std::copy(w.bytes.begin(), w.bytes.end(), durable_.begin() + w.offset);
    pending_.clear();
    ++syncs_;
    return Status::Ok();
  }

  // The n-th write from now (1-based) fails and the power goes; 0: none.
  void TearWrite(uint64_t n) { tear_at_ = n == 0 ? 0 : writes_ + n; }
  // The n-th sync from now (1-based) fails and the power goes, its writes
  // still unsynced; 0: none.
  void FailSync(uint64_t n) { fail_sync_at_ = n == 0 ? 0 : syncs_ + n; }

  enum class Fate { kLost, kTorn, kLanded };
  size_t unsynced_writes() const { return pending_.size(); }
  // REQUIRES: fates.size() == unsynced_writes().
  MemoryBlockIo AfterCrash(std::span<const Fate> fates) const {
    std::vector<uint8_t> out = durable_;
    for (size_t i = 0; i < pending_.size(); ++i) {
      const PendingWrite& w = pending_[i];
      if (fates[i] == Fate::kLost) continue;
      std::vector<uint8_t> bytes = w.bytes;
      if (fates[i] == Fate::kTorn) std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2), bytes.end(), 0xA5);
      std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(w.offset));
    }
    return MemoryBlockIo(std::move(out), name_);
  }
  MemoryBlockIo AfterCrash(bool keep_unsynced) const {
    std::vector<Fate> fates(pending_.size(), keep_unsynced ? Fate::kLanded : Fate::kLost);
    if (keep_unsynced && failed_ && !fates.empty()) fates.back() = Fate::kTorn;
    return AfterCrash(fates);
  }
  // The medium as reads see it.
  std::vector<uint8_t> bytes() const { return Current(); }
  void Poke(uint64_t offset, uint8_t value) {
    durable_[offset] = value;
  }
  uint64_t writes() const { return writes_; }
  uint64_t syncs() const { return syncs_; }
  uint64_t reads() const { return reads_; }

 private:
  struct PendingWrite {
    uint64_t offset;
    std::vector<uint8_t> bytes;
  };
  std::vector<uint8_t> Current() const {
    std::vector<uint8_t> out = durable_;
    for (const auto& w : pending_) std::copy(w.bytes.begin(), w.bytes.end(), out.begin() + w.offset);
    return out;
  }

  std::vector<uint8_t> durable_;
  std::vector<PendingWrite> pending_;
  std::string name_;
  uint64_t writes_ = 0, syncs_ = 0, reads_ = 0, tear_at_ = 0, fail_sync_at_ = 0;
  bool failed_ = false;
};

}  // namespace flashpipe::testing
