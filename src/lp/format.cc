#include "lp/format.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

#include "base/endian.h"

namespace flashpipe::lp {
namespace {

// Walks a byte span field by field, in on-disk order.
class In {
 public:
  explicit In(std::span<const uint8_t> b) : b_(b) {}
  template <typename T>
  T Get() {
    T v = LoadLE<T>(b_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }
  template <size_t N>
  std::array<uint8_t, N> Bytes() {
    std::array<uint8_t, N> a;
    std::memcpy(a.data(), b_.data() + pos_, N);
    pos_ += N;
    return a;
  }
  // A zero-padded name: up to the first NUL, at most 36 bytes.
  std::string Name() {
    const char* p = reinterpret_cast<const char*>(b_.data() + pos_);
    pos_ += kNameSize;
    return std::string(p, strnlen(p, kNameSize));
  }
  TableDescriptor Table() {
    TableDescriptor t;
    t.offset = Get<uint32_t>();
    t.num_entries = Get<uint32_t>();
    t.entry_size = Get<uint32_t>();
    return t;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

class Out {
 public:
  explicit Out(std::span<uint8_t> b) : b_(b) {}
  template <typename T>
  void Put(T v) {
    StoreLE<T>(b_.data() + pos_, v);
    pos_ += sizeof(T);
  }
  template <size_t N>
  void Bytes(const std::array<uint8_t, N>& a) {
    std::memcpy(b_.data() + pos_, a.data(), N);
    pos_ += N;
  }
  void Name(const std::string& s) {
    std::memset(b_.data() + pos_, 0, kNameSize);
    std::memcpy(b_.data() + pos_, s.data(), std::min(s.size(), kNameSize));
    pos_ += kNameSize;
  }
  void Table(const TableDescriptor& t) {
    Put(t.offset);
    Put(t.num_entries);
    Put(t.entry_size);
  }

 private:
  std::span<uint8_t> b_;
  size_t pos_ = 0;
};

}  // namespace

Geometry ParseGeometry(std::span<const uint8_t> bytes) {
  In in(bytes);
  Geometry g;
  g.magic = in.Get<uint32_t>();
  g.struct_size = in.Get<uint32_t>();
  g.checksum = in.Bytes<32>();
  g.metadata_max_size = in.Get<uint32_t>();
  g.metadata_slot_count = in.Get<uint32_t>();
  g.logical_block_size = in.Get<uint32_t>();
  return g;
}

void SerializeGeometry(const Geometry& g, std::span<uint8_t> out) {
  Out o(out);
  o.Put(g.magic);
  o.Put(g.struct_size);
  o.Bytes(g.checksum);
  o.Put(g.metadata_max_size);
  o.Put(g.metadata_slot_count);
  o.Put(g.logical_block_size);
}

Header ParseHeader(std::span<const uint8_t> bytes, uint32_t header_size) {
  In in(bytes);
  Header h;
  h.magic = in.Get<uint32_t>();
  h.major_version = in.Get<uint16_t>();
  h.minor_version = in.Get<uint16_t>();
  h.header_size = in.Get<uint32_t>();
  h.header_checksum = in.Bytes<32>();
  h.tables_size = in.Get<uint32_t>();
  h.tables_checksum = in.Bytes<32>();
  h.partitions = in.Table();
  h.extents = in.Table();
  h.groups = in.Table();
  h.block_devices = in.Table();
  if (header_size >= kHeaderSizeV1_2) {
    h.flags = in.Get<uint32_t>();
    h.reserved = in.Bytes<124>();
  }
  return h;
}

void SerializeHeader(const Header& h, std::span<uint8_t> out) {
  Out o(out);
  o.Put(h.magic);
  o.Put(h.major_version);
  o.Put(h.minor_version);
  o.Put(h.header_size);
  o.Bytes(h.header_checksum);
  o.Put(h.tables_size);
  o.Bytes(h.tables_checksum);
  o.Table(h.partitions);
  o.Table(h.extents);
  o.Table(h.groups);
  o.Table(h.block_devices);
  if (h.header_size >= kHeaderSizeV1_2) {
    o.Put(h.flags);
    o.Bytes(h.reserved);
  }
}

PartitionEntry ParsePartition(std::span<const uint8_t> bytes) {
  In in(bytes);
  PartitionEntry p;
  p.name = in.Name();
  p.attributes = in.Get<uint32_t>();
  p.first_extent_index = in.Get<uint32_t>();
  p.num_extents = in.Get<uint32_t>();
  p.group_index = in.Get<uint32_t>();
  return p;
}

void SerializePartition(const PartitionEntry& p, std::span<uint8_t> out) {
  Out o(out);
  o.Name(p.name);
  o.Put(p.attributes);
  o.Put(p.first_extent_index);
  o.Put(p.num_extents);
  o.Put(p.group_index);
}

ExtentEntry ParseExtent(std::span<const uint8_t> bytes) {
  In in(bytes);
  ExtentEntry e;
  e.num_sectors = in.Get<uint64_t>();
  e.target_type = in.Get<uint32_t>();
  e.target_data = in.Get<uint64_t>();
  e.target_source = in.Get<uint32_t>();
  return e;
}

void SerializeExtent(const ExtentEntry& e, std::span<uint8_t> out) {
  Out o(out);
  o.Put(e.num_sectors);
  o.Put(e.target_type);
  o.Put(e.target_data);
  o.Put(e.target_source);
}

GroupEntry ParseGroup(std::span<const uint8_t> bytes) {
  In in(bytes);
  GroupEntry g;
  g.name = in.Name();
  g.flags = in.Get<uint32_t>();
  g.maximum_size = in.Get<uint64_t>();
  return g;
}

void SerializeGroup(const GroupEntry& g, std::span<uint8_t> out) {
  Out o(out);
  o.Name(g.name);
  o.Put(g.flags);
  o.Put(g.maximum_size);
}

BlockDeviceEntry ParseBlockDevice(std::span<const uint8_t> bytes) {
  In in(bytes);
  BlockDeviceEntry b;
  b.first_logical_sector = in.Get<uint64_t>();
  b.alignment = in.Get<uint32_t>();
  b.alignment_offset = in.Get<uint32_t>();
  b.size = in.Get<uint64_t>();
  b.partition_name = in.Name();
  b.flags = in.Get<uint32_t>();
  return b;
}

void SerializeBlockDevice(const BlockDeviceEntry& b, std::span<uint8_t> out) {
  Out o(out);
  o.Put(b.first_logical_sector);
  o.Put(b.alignment);
  o.Put(b.alignment_offset);
  o.Put(b.size);
  o.Name(b.partition_name);
  o.Put(b.flags);
}

uint64_t PrimaryMetadataOffset(const Geometry& g, uint32_t slot) {
  return kReservedBytes + 2 * kGeometryBlockSize + uint64_t{g.metadata_max_size} * slot;
}

uint64_t BackupMetadataOffset(const Geometry& g, uint32_t slot) {
  return PrimaryMetadataOffset(g, g.metadata_slot_count) + uint64_t{g.metadata_max_size} * slot;
}

uint64_t TotalMetadataSize(const Geometry& g) {
  return kReservedBytes + 2 * (kGeometryBlockSize + uint64_t{g.metadata_max_size} * g.metadata_slot_count);
}

Sha256 ComputeSha256(std::span<const uint8_t> data) {
  Sha256 out;
  ::SHA256(data.data(), data.size(), out.data());
  return out;
}

}  // namespace flashpipe::lp
