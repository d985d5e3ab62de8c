// VectorBlockIo: an lp::BlockIo over a window of a byte vector the test owns
// (header-only, links only flashpipe_lp). The fastboot tests give it the
// in-memory disk of a MemQueue (testing/fastboot_fakes.h), so the metadata
// the daemon writes and the images its engine writes land on one medium.
//
//   testing::VectorBlockIo io(&mem.disk(), super_offset, super_size);
//
// Writes take effect at once (Sync only counts); the vector must outlive it
// and keep its size.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "lp/block_io.h"

namespace flashpipe::testing {

class VectorBlockIo final : public lp::BlockIo {
 public:
  VectorBlockIo(std::vector<uint8_t>* bytes, uint64_t base, uint64_t size, std::string name = "super")
      : bytes_(bytes), base_(base), size_(size), name_(std::move(name)) {}

  std::string_view name() const override { return name_; }
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    FP_RETURN_IF_ERROR(lp::CheckRange(name_, size_, offset, out.size()));
    std::memcpy(out.data(), bytes_->data() + base_ + offset, out.size());
    return Status::Ok();
  }
  Status Write(uint64_t offset, std::span<const uint8_t> data) override {
    FP_RETURN_IF_ERROR(lp::CheckRange(name_, size_, offset, data.size()));
    std::memcpy(bytes_->data() + base_ + offset, data.data(), data.size());
    ++writes_;
    return Status::Ok();
  }
  Status Sync() override {
    ++syncs_;
    return Status::Ok();
  }
  uint64_t writes() const { return writes_; }
  uint64_t syncs() const { return syncs_; }

 private:
  std::vector<uint8_t>* bytes_;
  uint64_t base_, size_;
  std::string name_;
  uint64_t writes_ = 0, syncs_ = 0;
};

}  // namespace flashpipe::testing
