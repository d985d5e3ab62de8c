#include "sparse/format.h"

#include "base/endian.h"

namespace flashpipe::sparse {

FileHeader ParseFileHeader(std::span<const uint8_t> b) {
  FileHeader h;
  h.magic = LoadLE<uint32_t>(b.data() + 0);
  h.major_version = LoadLE<uint16_t>(b.data() + 4);
  h.minor_version = LoadLE<uint16_t>(b.data() + 6);
  h.file_hdr_sz = LoadLE<uint16_t>(b.data() + 8);
  h.chunk_hdr_sz = LoadLE<uint16_t>(b.data() + 10);
  h.blk_sz = LoadLE<uint32_t>(b.data() + 12);
  h.total_blks = LoadLE<uint32_t>(b.data() + 16);
  h.total_chunks = LoadLE<uint32_t>(b.data() + 20);
  h.image_checksum = LoadLE<uint32_t>(b.data() + 24);
  return h;
}

ChunkHeader ParseChunkHeader(std::span<const uint8_t> b) {
  ChunkHeader h;
  h.chunk_type = LoadLE<uint16_t>(b.data() + 0);
  h.reserved1 = LoadLE<uint16_t>(b.data() + 2);
  h.chunk_sz = LoadLE<uint32_t>(b.data() + 4);
  h.total_sz = LoadLE<uint32_t>(b.data() + 8);
  return h;
}

void SerializeFileHeader(const FileHeader& h, std::span<uint8_t, kFileHeaderSize> out) {
  uint8_t* p = out.data();
  StoreLE<uint32_t>(p + 0, h.magic);
  StoreLE<uint16_t>(p + 4, h.major_version);
  StoreLE<uint16_t>(p + 6, h.minor_version);
  StoreLE<uint16_t>(p + 8, h.file_hdr_sz);
  StoreLE<uint16_t>(p + 10, h.chunk_hdr_sz);
  StoreLE<uint32_t>(p + 12, h.blk_sz);
  StoreLE<uint32_t>(p + 16, h.total_blks);
  StoreLE<uint32_t>(p + 20, h.total_chunks);
  StoreLE<uint32_t>(p + 24, h.image_checksum);
}

void SerializeChunkHeader(const ChunkHeader& h, std::span<uint8_t, kChunkHeaderSize> out) {
  uint8_t* p = out.data();
  StoreLE<uint16_t>(p + 0, h.chunk_type);
  StoreLE<uint16_t>(p + 2, h.reserved1);
  StoreLE<uint32_t>(p + 4, h.chunk_sz);
  StoreLE<uint32_t>(p + 8, h.total_sz);
}

bool HasSparseMagic(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && LoadLE<uint32_t>(bytes.data()) == kMagic;
}

const char* ChunkTypeName(uint16_t type) {
  switch (type) {
    case kChunkRaw: return "RAW";
    case kChunkFill: return "FILL";
    case kChunkDontCare: return "DONT_CARE";
    case kChunkCrc32: return "CRC32";
    default: return "UNKNOWN";
  }
}

}  // namespace flashpipe::sparse
