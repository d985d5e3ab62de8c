#include "partition/gpt_io.h"

#include <fmt/format.h>

#include "io/gpt.h"
#include "partition/gpt_image.h"

namespace flashpipe::partition {
namespace {

Status WriteAndFlush(lp::BlockIo& disk, uint64_t offset, const std::vector<uint8_t>& bytes) {
  FP_RETURN_IF_ERROR(disk.Write(offset, bytes));
  return disk.Sync();
}

std::string Summary(const Table& t) {
  return fmt::format("{} partitions, disk {}", t.partitions.size(), FormatGuid(t.disk_guid));
}

}  // namespace

Status WriteGpt(lp::BlockIo& disk, const Table& table) {
  if (table.disk_lbas * table.sector_size > disk.size()) {
    return Internal(fmt::format("{}: table made for {} LBAs, the disk has {} bytes", disk.name(), table.disk_lbas,
                                disk.size()));
  }
  const GptImage g = EncodeGpt(table);
  const uint64_t ss = g.sector_size;
  FP_RETURN_IF_ERROR(WriteAndFlush(disk, g.backup_entries_lba * ss, g.entries));
  FP_RETURN_IF_ERROR(WriteAndFlush(disk, g.backup_header_lba * ss, g.backup_header));
  FP_RETURN_IF_ERROR(disk.Write(0, g.mbr));
  FP_RETURN_IF_ERROR(WriteAndFlush(disk, g.primary_entries_lba * ss, g.entries));
  FP_RETURN_IF_ERROR(WriteAndFlush(disk, ss, g.primary_header));
  std::vector<std::string> warnings;
  FP_ASSIGN_OR_RETURN(Table back, ReadTable(disk, table.sector_size, &warnings));
  if (back != table || !warnings.empty()) {
    return Mismatch(fmt::format("{}: the table read back ({}{}) is not the one written ({})", disk.name(),
                                Summary(back), warnings.empty() ? "" : "; " + warnings.front(), Summary(table)));
  }
  return Status::Ok();
}

Result<Table> ReadTable(lp::BlockIo& disk, uint32_t sector_size, std::vector<std::string>* warnings) {
  auto read_at = [&disk](uint64_t offset, std::span<uint8_t> out) { return disk.Read(offset, out); };
  auto gpt = io::ReadGpt(read_at, disk.size(), sector_size);
  if (!gpt.ok()) return gpt.status().WithContext(std::string(disk.name()));
  if (warnings) *warnings = gpt->warnings;
  return FromGpt(*gpt, disk.size());
}

}  // namespace flashpipe::partition
