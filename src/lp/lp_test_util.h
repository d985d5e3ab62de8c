// Shared by the lp tests: a sample layout, and patching of serialized
// metadata (a field changed, then the checksums signed again so that the
// check under test is the one that fails).
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "base/endian.h"
#include "lp/builder.h"
#include "lp/writer.h"

namespace flashpipe::lp::test {

// super of 64 MiB, 1 MiB alignment, 2 slots of 4096 bytes; groups default and
// main (32 MiB); system (main, 8 MiB), vendor (main, 4 MiB), product
// (default, empty).
inline Builder SampleBuilder(uint64_t super_size = 64 << 20, uint32_t alignment = 1 << 20) {
  LayoutSpec spec;
  spec.devices.push_back({"super", super_size, alignment, 0});
  spec.metadata_max_size = 4096;
  spec.metadata_slot_count = 2;
  auto b = Builder::New(spec);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  Builder out = std::move(b).value();
  EXPECT_TRUE(out.AddGroup("main", 32 << 20).ok());
  EXPECT_TRUE(out.AddPartition("system", "main", kAttrReadonly).ok());
  EXPECT_TRUE(out.AddPartition("vendor", "main", kAttrReadonly).ok());
  EXPECT_TRUE(out.AddPartition("product", "default", 0).ok());
  EXPECT_TRUE(out.ResizePartition("system", 8 << 20).ok());
  EXPECT_TRUE(out.ResizePartition("vendor", 4 << 20).ok());
  return out;
}

inline Metadata SampleMetadata() {
  auto m = SampleBuilder().Export();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

template <typename T>
void Put(std::vector<uint8_t>& b, uint64_t offset, T v) {
  StoreLE<T>(b.data() + offset, v);
}
template <typename T>
T Get(const std::vector<uint8_t>& b, uint64_t offset) {
  return LoadLE<T>(b.data() + offset);
}

// Signs the metadata copy at `at` again: tables checksum, then header.
inline void Resign(std::vector<uint8_t>& b, uint64_t at) {
  const uint32_t header_size = Get<uint32_t>(b, at + 8);
  const uint32_t tables_size = Get<uint32_t>(b, at + 44);
  const uint64_t end = std::min<uint64_t>(b.size(), at + header_size + tables_size);
  Sha256 t = ComputeSha256(std::span(b).subspan(at + header_size, end - at - header_size));
  std::copy(t.begin(), t.end(), b.begin() + static_cast<std::ptrdiff_t>(at + 48));
  std::vector<uint8_t> h(b.begin() + static_cast<std::ptrdiff_t>(at),
                         b.begin() + static_cast<std::ptrdiff_t>(at + std::min<uint64_t>(header_size, 256)));
  std::fill(h.begin() + 12, h.begin() + 44, 0);
  Sha256 s = ComputeSha256(h);
  std::copy(s.begin(), s.end(), b.begin() + static_cast<std::ptrdiff_t>(at + 12));
}

inline void ResignGeometry(std::vector<uint8_t>& b, uint64_t at) {
  std::vector<uint8_t> g(b.begin() + static_cast<std::ptrdiff_t>(at),
                         b.begin() + static_cast<std::ptrdiff_t>(at + kGeometrySize));
  std::fill(g.begin() + 8, g.begin() + 40, 0);
  Sha256 s = ComputeSha256(g);
  std::copy(s.begin(), s.end(), b.begin() + static_cast<std::ptrdiff_t>(at + 8));
}

// Byte offset of entry i of the table whose descriptor sits at header+desc
// (80 partitions, 92 extents, 104 groups, 116 block devices).
inline uint64_t EntryOffset(const std::vector<uint8_t>& b, uint64_t at, uint32_t desc, uint32_t i) {
  const uint32_t header_size = Get<uint32_t>(b, at + 8);
  return at + header_size + Get<uint32_t>(b, at + desc) + uint64_t{Get<uint32_t>(b, at + desc + 8)} * i;
}

}  // namespace flashpipe::lp::test
