// libFuzzer target for the liblp metadata reader (and the writer's repair).
// The first byte picks the mode, the rest is the input:
//   even  a super_empty.img: ParseEmptyImage, then, as the daemon's
//         update-super does, PlanUpdateSuper against a fixed A/B device
//         (with and without wipe, on each slot)
//   odd   a super partition whose bytes after the 4096 reserved ones are the
//         input: InspectSuper, ReadMetadata of slot (mode >> 1) % 4, then
//         RepairMetadata on it
// Besides "no crash, no undefined behaviour", it checks the promises:
// whatever the reader accepts, the writer serializes, and that parses back
// to the same tables; a slot ReadMetadata returns has a valid copy in
// InspectSuper; after a successful repair every copy is valid; a plan for
// update-super serializes, and keeps the partitions it names with the
// extents they had on the device.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "lp/builder.h"
#include "lp/reader.h"
#include "lp/update_super.h"
#include "lp/writer.h"
#include "testing/memory_block_io.h"

namespace {

using namespace flashpipe;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckRoundTrip(const lp::Metadata& m) {
  auto blob = lp::SerializeMetadata(m);
  Check(blob.ok());
  auto back = lp::ParseMetadataCopy(m.geometry, *blob, "round trip", 0);
  Check(back.ok());
  Check(back->partitions == m.partitions && back->extents == m.extents && back->groups == m.groups &&
        back->block_devices == m.block_devices && back->header.flags == m.header.flags &&
        back->header.minor_version == m.header.minor_version);
}

void Super(std::span<const uint8_t> in, uint32_t slot) {
  std::vector<uint8_t> bytes(lp::kReservedBytes, 0);
  bytes.insert(bytes.end(), in.begin(), in.end());
  testing::MemoryBlockIo io(std::move(bytes), "super");
  auto state = lp::InspectSuper(io);
  Check(state.ok());
  auto m = lp::ReadMetadata(io, slot);
  if (m.ok()) {
    CheckRoundTrip(*m);
    Check(slot < state->slots.size() && (state->slots[slot][0].status.ok() || state->slots[slot][1].status.ok()));
  }
  auto repaired = lp::RepairMetadata(io);
  if (!repaired.ok()) return;
  auto after = lp::InspectSuper(io);
  Check(after.ok() && after->geometry[0].status.ok() && after->geometry[1].status.ok());
  for (const auto& s : after->slots) Check(s[0].status.ok() && s[1].status.ok());
}

// The device update-super is planned against: 16 MiB super, 2 slots of 4 KiB,
// system_a and system_b of 2 MiB in group main.
const lp::Metadata& Device() {
  static const lp::Metadata m = [] {
    lp::LayoutSpec spec;
    spec.devices.push_back({"super", 16 << 20, 1 << 20, 0});
    spec.metadata_max_size = 4096;
    auto b = lp::Builder::New(spec);
    Check(b.ok() && b->AddGroup("main", 8 << 20).ok());
    for (const char* name : {"system_a", "system_b"}) {
      Check(b->AddPartition(name, "main", 0).ok() && b->ResizePartition(name, 2 << 20).ok());
    }
    auto out = b->Export();
    Check(out.ok());
    return *out;
  }();
  return m;
}

void UpdateSuper(const lp::Metadata& incoming) {
  const lp::Metadata& device = Device();
  for (const char* suffix : {"_a", "_b", ""}) {
    for (bool wipe : {false, true}) {
      auto plan = lp::PlanUpdateSuper({"super", 16 << 20, device.geometry}, incoming, &device, suffix, wipe);
      if (!plan.ok()) continue;
      CheckRoundTrip(plan->metadata);
      for (const auto& name : plan->kept) {
        const lp::PartitionEntry* was = lp::FindPartition(device, name);
        const lp::PartitionEntry* now = lp::FindPartition(plan->metadata, name);
        Check(was != nullptr && now != nullptr);
        auto a = lp::ExtentsOf(device, *was);
        auto b = lp::ExtentsOf(plan->metadata, *now);
        Check(std::equal(a.begin(), a.end(), b.begin(), b.end()));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::span<const uint8_t> in(data + 1, size - 1);
  if (mode % 2 == 0) {
    auto m = lp::ParseEmptyImage(in);
    if (m.ok()) {
      CheckRoundTrip(*m);
      UpdateSuper(*m);
    }
    return 0;
  }
  Super(in, (mode >> 1) % 4);
  return 0;
}
