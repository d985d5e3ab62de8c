#include "powercut/device_checkers.h"

#include <algorithm>
#include <cstring>

#include "base/sha256.h"
#include "fastboot/boot_control.h"
#include "io/gpt.h"
#include "lp/reader.h"
#include "lp/writer.h"

namespace flashpipe::powercut {
namespace {

Status Outside(std::string_view what, uint64_t offset, uint64_t size, uint64_t device) {
  return InvalidArgument(fmt::format("{}: {} bytes at byte {} lie outside the device of {} bytes", what, size,
                                     offset, device));
}

bool Inside(uint64_t offset, uint64_t size, uint64_t device) { return offset <= device && size <= device - offset; }

// A copy of the super's metadata area, which repair may write to, as the
// daemon's BlockIo over the whole super.
class CopyBlockIo final : public lp::BlockIo {
 public:
  CopyBlockIo(std::span<const uint8_t> area, uint64_t size) : bytes_(area.begin(), area.end()), size_(size) {}
  std::string_view name() const override { return "super"; }
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, std::span<uint8_t> out) override {
    FP_RETURN_IF_ERROR(Within(offset, out.size()));
    std::memcpy(out.data(), bytes_.data() + offset, out.size());
    return Status::Ok();
  }
  Status Write(uint64_t offset, std::span<const uint8_t> data) override {
    FP_RETURN_IF_ERROR(Within(offset, data.size()));
    std::memcpy(bytes_.data() + offset, data.data(), data.size());
    return Status::Ok();
  }
  Status Sync() override { return Status::Ok(); }

 private:
  Status Within(uint64_t offset, uint64_t len) const {
    FP_RETURN_IF_ERROR(lp::CheckRange("super", size_, offset, len));
    if (offset + len > bytes_.size()) {
      return IoError(fmt::format("the metadata reaches byte {}, past the {} bytes the checker reads (raise it)",
                                 offset + len, bytes_.size()), EIO);
    }
    return Status::Ok();
  }
  std::vector<uint8_t> bytes_;
  uint64_t size_;
};

constexpr const char* kNoMetadata = "no logical partitions (no valid geometry or metadata)";

std::string DescribeMetadata(const lp::Metadata& m) {
  std::string s = fmt::format("{} groups:", m.groups.size());
  for (const auto& g : m.groups) s += fmt::format(" {}(max {})", g.name, g.maximum_size);
  s += fmt::format("; {} partitions:", m.partitions.size());
  for (const auto& p : m.partitions) {
    s += fmt::format(" {}[group {}, attrs {}", p.name, p.group_index, p.attributes);
    for (const auto& x : lp::ExtentsOf(m, p)) {
      s += fmt::format(", {}:{}+{}", x.target_type, x.target_data, x.num_sectors);
    }
    s += "]";
  }
  return s;
}

}  // namespace

std::pair<uint64_t, uint64_t> BootControlChecker::region() const {
  return {misc_offset_ + fastboot::kBootControlOffset, sizeof(fastboot::BootControlBytes)};
}

Result<Reading> BootControlChecker::Read(std::span<const uint8_t> device) {
  auto [at, len] = region();
  if (!Inside(at, len, device.size())) return Outside("boot control block", at, len, device.size());
  fastboot::BootControlBytes b;
  std::copy_n(device.begin() + static_cast<std::ptrdiff_t>(at), len, b.begin());
  if (!fastboot::HasValidBootControl(b)) return Reading{"no valid bootloader_control (magic or CRC)"};
  const int next = fastboot::NextBootSlot(b, 0);
  std::string s = next < 0 ? "no bootable slot" : fmt::format("boots slot {}", static_cast<char>('a' + next));
  for (unsigned i = 0; i < fastboot::SlotCount(b) && i < fastboot::kMaxSlots; ++i) {
    auto m = fastboot::GetSlot(b, i);
    s += fmt::format("; {}: priority {}, {} tries{}{}", static_cast<char>('a' + i), m.priority, m.tries_remaining,
                     m.successful_boot ? ", successful" : "", m.verity_corrupted ? ", verity corrupted" : "");
  }
  return Reading{s};
}

Result<Reading> LpMetadataChecker::Read(std::span<const uint8_t> device) {
  if (!Inside(offset_, size_, device.size())) return Outside("super", offset_, size_, device.size());
  CopyBlockIo io(device.subspan(offset_, area_), size_);
  auto repaired = lp::RepairMetadata(io);
  if (!repaired.ok() && repaired.status().code() == Code::kIoError) return repaired.status();
  auto g = lp::ReadGeometry(io);
  if (!g.ok() && g.status().code() == Code::kIoError) return g.status();
  // However it lacks them, the daemon then serves no logical partitions.
  if (!g.ok()) return Reading{kNoMetadata};
  const uint32_t slot = slot_ < g->metadata_slot_count ? slot_ : 0;
  auto m = lp::ReadMetadata(io, slot);
  if (!m.ok() && m.status().code() == Code::kIoError) return m.status();
  if (!m.ok()) return Reading{kNoMetadata};
  return Reading{fmt::format("slot {}: {}", slot, DescribeMetadata(*m))};
}

Result<Reading> RegionChecker::Read(std::span<const uint8_t> device) {
  if (!Inside(offset_, size_, device.size())) return Outside("region", offset_, size_, device.size());
  Sha256 h;
  h.Update(device.subspan(offset_, size_));
  return Reading{fmt::format("sha256 {} of {} bytes at {}", Sha256::Hex(h.Final()), size_, offset_)};
}

Result<Reading> GptChecker::Read(std::span<const uint8_t> device) {
  auto read_at = [&](uint64_t offset, std::span<uint8_t> out) -> Status {
    if (!Inside(offset, out.size(), device.size())) return Outside("gpt", offset, out.size(), device.size());
    std::memcpy(out.data(), device.data() + offset, out.size());
    return Status::Ok();
  };
  auto t = io::ReadGpt(read_at, device.size(), sector_);
  if (!t.ok()) return Reading{"no valid GPT", true};
  auto hex = [](const std::array<uint8_t, 16>& g) {
    std::string s;
    for (uint8_t b : g) s += fmt::format("{:02x}", b);
    return s;
  };
  std::string text = fmt::format("disk {} usable {}-{}, {} entries:", hex(t->disk_guid), t->first_usable,
                                 t->last_usable, t->num_entries);
  for (const io::GptPartition& p : t->partitions) {
    text += fmt::format(" {}[{}-{} type {} uuid {} attrs {:x} '{}']", p.index + 1, p.first_lba, p.last_lba,
                        hex(p.type_guid), hex(p.unique_guid), p.attributes, p.name);
  }
  return Reading{text, false};
}

}  // namespace flashpipe::powercut
