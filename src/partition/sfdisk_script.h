// util-linux sfdisk scripts, the format `sfdisk --dump` prints and
// `sfdisk DEVICE < script` reads, for GPT:
//
//   label: gpt
//   label-id: 2088CF5C-F3C2-48AE-9D21-9F6AA9264EFA
//   device: /dev/loop0
//   unit: sectors
//   first-lba: 34
//   last-lba: 16777182
//   sector-size: 512
//
//   /dev/loop0p1 : start=2048, size=131072, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, uuid=..., name="boot"
//   /dev/loop0p2 : size=64MiB, type=linux, name="rootfs", attrs="RequiredPartition GUID:60"
//
// Header lines are "key: value" (label, label-id, device, unit, first-lba,
// last-lba, table-length, sector-size, grain); partition lines are an
// optional "NODE :" (its trailing number is the entry number, as sfdisk
// takes it) and key=value fields separated by commas or blanks (start,
// size, type or Id, uuid, name, attrs, and the flag bootable, which sets
// LegacyBIOSBootable). Numbers are sectors unless they carry a suffix
// (text_fields.h); size "+" or "-" or no size is the rest of the disk.
// Quoted values may hold \xNN escapes (sfdisk writes a '"' as \x22).
// '#' starts a comment line. Only "label: gpt" and "unit: sectors" are
// taken. Unnamed fields ("2048,4096,L") are refused with a message that
// says so. Every error names the line and the field.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "partition/layout.h"

namespace flashpipe::partition {

Result<Layout> ParseSfdiskScript(std::string_view text);
// As `sfdisk --dump` prints it; `device` names the nodes ("/dev/loop0" gives
// /dev/loop0p1, "disk.img" disk.img1).
std::string FormatSfdiskScript(const Table& table, std::string_view device);

}  // namespace flashpipe::partition
