// libFuzzer target for the layout parsers (partition/sfdisk_script.h,
// partition/uboot_string.h) and what follows them in `flashpipe partition`.
// The first byte picks the format (even: sfdisk script, odd: U-Boot string)
// and the disk (bits 1-2: 1 MiB, 64 MiB, 8 GiB, 2 TiB; bit 3: 4096-byte
// sectors); the rest is the layout.
// Besides "no crash, no undefined behaviour", it checks the promises: a
// layout that resolves gives a table CheckTable accepts; printed in either
// format (when the U-Boot string can hold it) and parsed back, it resolves
// to the same table; and its GPT, written to an in-memory disk (small disks
// only), reads back as that table.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "partition/gpt_io.h"
#include "partition/sfdisk_script.h"
#include "partition/uboot_string.h"
#include "testing/vector_block_io.h"

namespace {

using namespace flashpipe;
using namespace flashpipe::partition;

void Check(bool ok) {
  if (!ok) std::abort();
}

Guid Fixed() {
  static uint8_t n = 0;
  Guid g{};
  g[0] = ++n;
  g[1] = 0x5A;
  return g;
}

void RoundTrip(const Table& t, const Disk& disk) {
  auto sf = ParseSfdiskScript(FormatSfdiskScript(t, "/dev/mmcblk0"));
  Check(sf.ok());
  auto t2 = Resolve(*sf, disk, Fixed);
  Check(t2.ok() && *t2 == t);
  auto ub = FormatUbootString(t);
  if (ub.ok() && UbootLost(t).empty()) {
    auto l = ParseUbootString(*ub);
    Check(l.ok());
    auto t3 = Resolve(*l, disk, Fixed);
    Check(t3.ok() && *t3 == t);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  constexpr uint64_t kSizes[] = {1ull << 20, 64ull << 20, 8ull << 30, 2ull << 40};
  const Disk disk{.size = kSizes[(mode >> 1) & 3], .sector_size = (mode & 8) ? 4096u : 512u};
  auto layout = mode % 2 == 0 ? ParseSfdiskScript(text) : ParseUbootString(text);
  if (!layout.ok()) return 0;
  auto table = Resolve(*layout, disk, Fixed);
  if (!table.ok()) return 0;
  Check(CheckTable(*table).ok());
  RoundTrip(*table, disk);
  if (disk.size <= (64ull << 20)) {
    std::vector<uint8_t> medium(disk.size, 0);
    testing::VectorBlockIo io(&medium, 0, medium.size(), "fuzz");
    Check(WriteGpt(io, *table).ok());
    auto back = ReadTable(io, disk.sector_size);
    Check(back.ok() && *back == *table);
  }
  return 0;
}
