// The Android sparse image format: on-disk constants and header structs.
// The rules flashpipe enforces are in docs/sparse_format.md; this file only
// names the fields. All fields are little-endian; parse with ParseFileHeader /
// ParseChunkHeader (memcpy-based), never by casting a byte pointer.
#pragma once

#include <cstdint>
#include <span>

namespace flashpipe::sparse {

inline constexpr uint32_t kMagic = 0xED26FF3A;
inline constexpr uint16_t kMajorVersion = 1;
inline constexpr uint16_t kFileHeaderSize = 28;   // minimum and what we write
inline constexpr uint16_t kChunkHeaderSize = 12;  // minimum and what we write

enum ChunkType : uint16_t {
  kChunkRaw = 0xCAC1,
  kChunkFill = 0xCAC2,
  kChunkDontCare = 0xCAC3,
  kChunkCrc32 = 0xCAC4,
};

struct FileHeader {
  uint32_t magic = kMagic;
  uint16_t major_version = kMajorVersion;
  uint16_t minor_version = 0;
  uint16_t file_hdr_sz = kFileHeaderSize;
  uint16_t chunk_hdr_sz = kChunkHeaderSize;
  uint32_t blk_sz = 4096;
  uint32_t total_blks = 0;
  uint32_t total_chunks = 0;
  uint32_t image_checksum = 0;

  // Size of the expanded image in bytes.
  uint64_t image_size() const { return uint64_t{blk_sz} * total_blks; }
};

struct ChunkHeader {
  uint16_t chunk_type = 0;
  uint16_t reserved1 = 0;
  uint32_t chunk_sz = 0;  // output blocks
  uint32_t total_sz = 0;  // input bytes, this header included
};

// REQUIRES: bytes.size() >= 28 / 12. No validation: that is the decoder's job.
FileHeader ParseFileHeader(std::span<const uint8_t> bytes);
ChunkHeader ParseChunkHeader(std::span<const uint8_t> bytes);
// Write exactly 28 / 12 bytes.
void SerializeFileHeader(const FileHeader& h, std::span<uint8_t, kFileHeaderSize> out);
void SerializeChunkHeader(const ChunkHeader& h, std::span<uint8_t, kChunkHeaderSize> out);

// True when `bytes` starts with the sparse magic (for input type detection).
bool HasSparseMagic(std::span<const uint8_t> bytes);

// "RAW", "FILL", "DONT_CARE", "CRC32" or "UNKNOWN".
const char* ChunkTypeName(uint16_t type);

}  // namespace flashpipe::sparse
