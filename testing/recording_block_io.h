// RecordingBlockIo: an lp::BlockIo over a byte vector that records every
// write and every sync in order (header-only, links only flashpipe_lp), so
// that a test can replay any prefix of a writer's I/O onto a copy of the old
// medium, as a power cut would leave it:
//
//   std::vector<uint8_t> disk = old;
//   testing::RecordingBlockIo io(&disk);
//   ...run the writer on io...
//   for (size_t k = 0; k <= io.ops().size(); ++k) {
//     auto state = io.Replay(old, k);            // the first k ops landed
//     auto torn = io.Replay(old, k, sectors);    // and op k only its first sectors
//   }
//
// Syncs are kept as ops of their own (kind kSync) so that a test can also
// ask which writes a flush separates.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "lp/block_io.h"

namespace flashpipe::testing {

class RecordingBlockIo final : public lp::BlockIo {
 public:
  enum class Kind { kWrite, kSync };
  struct Op {
    Kind kind;
    uint64_t offset = 0;
    std::vector<uint8_t> data;
  };

  explicit RecordingBlockIo(std::vector<uint8_t>* medium, std::string name = "disk")
      : medium_(medium), name_(std::move(name)) {}

  std::string_view name() const override { return name_; }
  uint64_t size() const override { return medium_->size(); }
  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    FP_RETURN_IF_ERROR(lp::CheckRange(name_, size(), offset, out.size()));
    std::memcpy(out.data(), medium_->data() + offset, out.size());
    return Status::Ok();
  }
  Status Write(uint64_t offset, std::span<const uint8_t> data) override {
    FP_RETURN_IF_ERROR(lp::CheckRange(name_, size(), offset, data.size()));
    std::memcpy(medium_->data() + offset, data.data(), data.size());
    ops_.push_back({Kind::kWrite, offset, {data.begin(), data.end()}});
    return Status::Ok();
  }
  Status Sync() override {
    ops_.push_back({Kind::kSync, 0, {}});
    return Status::Ok();
  }

  const std::vector<Op>& ops() const { return ops_; }
  // `old` with the first `count` ops applied and, when `torn_bytes` is not
  // 0, the first `torn_bytes` of op `count` (a write) too.
  std::vector<uint8_t> Replay(const std::vector<uint8_t>& old, size_t count, uint64_t torn_bytes = 0) const {
    std::vector<uint8_t> out = old;
    for (size_t i = 0; i < count && i < ops_.size(); ++i) Apply(ops_[i], ops_[i].data.size(), &out);
    if (torn_bytes && count < ops_.size()) Apply(ops_[count], torn_bytes, &out);
    return out;
  }

 private:
  static void Apply(const Op& op, uint64_t bytes, std::vector<uint8_t>* out) {
    if (op.kind != Kind::kWrite) return;
    std::memcpy(out->data() + op.offset, op.data.data(), std::min<uint64_t>(bytes, op.data.size()));
  }

  std::vector<uint8_t>* medium_;
  std::string name_;
  std::vector<Op> ops_;
};

}  // namespace flashpipe::testing
