// U-Boot's $partitions string, as `gpt write mmc 0 $partitions` and
// `gpt verify` read it (cmd/gpt.c, set_gpt_info) and `gpt read ... VAR`
// writes it:
//
//   uuid_disk=1D1BCBD5-...;name=boot,start=1MiB,size=64MiB,uuid=...,type=esp,bootable;name=rootfs,size=-;
//
// Elements are separated by ';' (blanks and line breaks around them are
// ignored, so a layout file may put one partition per line). An optional
// first element uuid_disk=GUID; then one per partition with name
// (required), size (required; "-" is the rest of the disk, last partition
// only), start, uuid, type (a GUID or a name: types.h, with U-Boot's own
// names), and the flag bootable (LegacyBIOSBootable). Numbers are bytes
// unless they carry a suffix (text_fields.h), as U-Boot's ustrtoull reads
// them. U-Boot variables (${uuid_gpt_disk}) are refused: this is not
// U-Boot's shell, give the value. Every error names the partition (by
// position and name) and the field.
//
// What the string cannot carry: first-lba, last-lba, the entry count and
// entry numbers (partitions are numbered in order), attributes other than
// bootable. FormatUbootString refuses a table without partitions and one
// whose names it cannot write (empty, or holding ',', ';', '=' or '${'); `Lost` says what else a table holds
// that the string drops, so that the command can warn.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "partition/layout.h"

namespace flashpipe::partition {

Result<Layout> ParseUbootString(std::string_view text);
Result<std::string> FormatUbootString(const Table& table);
// "partition 3 has attributes 0x1000000000000000 beyond bootable", ...
std::vector<std::string> UbootLost(const Table& table);

}  // namespace flashpipe::partition
