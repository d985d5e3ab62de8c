#include "partition/table_source.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "io/gpt.h"
#include "partition/partition_job.h"

namespace flashpipe::partition {
namespace {

constexpr char kSignature[] = "EFI PART";

bool SignatureAt(std::span<const uint8_t> bytes, uint64_t at) {
  return bytes.size() >= at + 8 && std::memcmp(bytes.data() + at, kSignature, 8) == 0;
}

uint32_t ImageSector(std::span<const uint8_t> bytes) { return SignatureAt(bytes, 512) ? 512 : 4096; }

bool IsText(std::span<const uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](uint8_t c) { return c >= 0x20 || c == '\t' || c == '\n' || c == '\r'; });
}

Result<Table> FromGptImage(std::span<const uint8_t> bytes, Disk disk) {
  const uint32_t sector = ImageSector(bytes);
  if (disk.sector_size != 0 && disk.sector_size != sector) {
    return InvalidArgument(fmt::format("GPT image of {}-byte sectors for a disk of {}-byte sectors", sector,
                                       disk.sector_size));
  }
  // The image is the disk's first bytes; the rest reads as zeros, so only
  // the primary can validate (a bad one is refused below, never replaced by
  // whatever follows).
  auto read_at = [&](uint64_t offset, std::span<uint8_t> out) -> Status {
    std::fill(out.begin(), out.end(), 0);
    if (offset < bytes.size()) {
      const uint64_t n = std::min<uint64_t>(out.size(), bytes.size() - offset);
      std::memcpy(out.data(), bytes.data() + offset, n);
    }
    return Status::Ok();
  };
  auto gpt = io::ReadGpt(read_at, disk.size, sector);
  if (!gpt.ok()) return gpt.status().WithContext("GPT image");
  if (gpt->from_backup) {
    return InvalidArgument(fmt::format("GPT image: the primary header or its entries are bad ({})",
                                       gpt->warnings.empty() ? "CRC" : gpt->warnings.front()));
  }
  if (gpt->num_entries < 1 || gpt->num_entries > kMaxEntries) {
    return InvalidArgument(fmt::format("GPT image: {} entries, outside 1-{}", gpt->num_entries, kMaxEntries));
  }
  Table t = FromGpt(*gpt, disk.size);
  // The disk's own usable range, as U-Boot puts the backup at the disk's end.
  const uint64_t es = EntrySectors(t.num_entries, t.sector_size);
  if (t.disk_lbas < 2 * es + 4) return NoSpace("the target is too small for the GPT image's entry array");
  t.first_usable = std::max<uint64_t>(t.first_usable, 2 + es);
  t.last_usable = t.disk_lbas - 2 - es;
  if (Status st = CheckTable(t); !st.ok()) return st.WithContext("GPT image");
  return t;
}

}  // namespace

bool LooksLikeGptImage(std::span<const uint8_t> bytes) { return SignatureAt(bytes, 512) || SignatureAt(bytes, 4096); }

Result<Table> TableFromSource(std::span<const uint8_t> bytes, Disk disk) {
  if (bytes.empty()) return InvalidArgument("empty");
  if (LooksLikeGptImage(bytes)) return FromGptImage(bytes, disk);
  if (!IsText(bytes)) {
    return InvalidArgument("neither a GPT image nor a layout text (no 'EFI PART' at byte 512 or 4096; not text)");
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  FP_ASSIGN_OR_RETURN(Layout layout, ParseLayout(text, LayoutFormat::kAuto));
  if (disk.sector_size == 0) disk.sector_size = layout.sector_size.value_or(512);
  return Resolve(layout, disk);
}

}  // namespace flashpipe::partition
