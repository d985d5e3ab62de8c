// Checkers that read a raw device region (checker.h):
//   BootControlChecker  the misc partition's bootloader_control, as U-Boot's
//                       android_ab or the boot control HAL reads it: valid
//                       magic and CRC, then the slot booted next and every
//                       slot's priority, tries and flags.
//   LpMetadataChecker   the super's liblp metadata, opened as the daemon
//                       opens it (RepairMetadata, then the metadata slot of
//                       its current A/B slot): partitions, groups and every
//                       extent, or why there is none. Only the metadata
//                       area (the first `metadata_area` bytes of the super)
//                       is read; a geometry that points past it is an error.
//   RegionChecker       the SHA-256 of a byte range (what `write` put on a
//                       block device).
//   GptChecker          the GUID partition table, read by io/gpt.h as
//                       `serve`, `read DEV:NAME` and `partition --dump` read
//                       it: the disk GUID, the usable range and every entry
//                       (number, LBAs, type, GUID, attributes, name), or "no
//                       valid GPT", fail-closed (acceptable only while a
//                       table is being changed).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "powercut/checker.h"

namespace flashpipe::powercut {

class BootControlChecker final : public Checker {
 public:
  explicit BootControlChecker(uint64_t misc_offset) : misc_offset_(misc_offset) {}
  std::string_view name() const override { return "boot-control"; }
  std::pair<uint64_t, uint64_t> region() const override;
  Result<Reading> Read(std::span<const uint8_t> device) override;

 private:
  uint64_t misc_offset_;
};

class LpMetadataChecker final : public Checker {
 public:
  static constexpr uint64_t kDefaultArea = 1 << 20;
  LpMetadataChecker(uint64_t super_offset, uint64_t super_size, uint32_t metadata_slot,
                    uint64_t metadata_area = kDefaultArea)
      : offset_(super_offset), size_(super_size), slot_(metadata_slot), area_(std::min(metadata_area, super_size)) {}
  std::string_view name() const override { return "lp-metadata"; }
  std::pair<uint64_t, uint64_t> region() const override { return {offset_, area_}; }
  Result<Reading> Read(std::span<const uint8_t> device) override;

 private:
  uint64_t offset_, size_;
  uint32_t slot_;
  uint64_t area_;
};

class RegionChecker final : public Checker {
 public:
  RegionChecker(uint64_t offset, uint64_t size) : offset_(offset), size_(size) {}
  std::string_view name() const override { return "region"; }
  std::pair<uint64_t, uint64_t> region() const override { return {offset_, size_}; }
  Result<Reading> Read(std::span<const uint8_t> device) override;

 private:
  uint64_t offset_, size_;
};

class GptChecker final : public Checker {
 public:
  explicit GptChecker(uint32_t sector_size = 512) : sector_(sector_size) {}
  std::string_view name() const override { return "gpt"; }
  Result<Reading> Read(std::span<const uint8_t> device) override;
  bool fail_closed_ok() const override { return true; }

 private:
  uint32_t sector_;
};

}  // namespace flashpipe::powercut
