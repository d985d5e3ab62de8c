// OpLogBlockIo: an lp::BlockIo over a byte vector that records every
// write (offset and bytes) and every sync in order (header-only, links only
// flashpipe_lp), so that a test can rebuild, on a copy of the old medium,
// what a power cut leaves: the writes before the last sync landed, any
// subset of those after it, each possibly torn.
//
//   std::vector<uint8_t> disk = old;
//   testing::OpLogBlockIo io(&disk);
//   ...run the writer on io...
//   for (const auto& op : io.ops()) ...   // kWrite (offset, data) or kSync
//
// partition/gpt_io_test.cc's Judge is the example. (testing/volatile_cache.h's
// RecordingBlockIo records into the power-cut harness's WriteLog instead,
// for tests that link flashpipe_powercut.)
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "lp/block_io.h"

namespace flashpipe::testing {

class OpLogBlockIo final : public lp::BlockIo {
 public:
  enum class Kind { kWrite, kSync };
  struct Op {
    Kind kind;
    uint64_t offset = 0;
    std::vector<uint8_t> data;
  };

  explicit OpLogBlockIo(std::vector<uint8_t>* medium, std::string name = "disk")
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
 private:
  std::vector<uint8_t>* medium_;
  std::string name_;
  std::vector<Op> ops_;
};

}  // namespace flashpipe::testing
