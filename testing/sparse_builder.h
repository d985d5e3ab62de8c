// SparseBuilder: builds Android sparse images in memory, chunk by chunk, for
// tests -- valid ones (with the expanded image they stand for, to compare
// against) and invalid ones (any header field, any chunk header, trailing
// bytes). Header-only; links only flashpipe_base (for the CRC).
//
//   testing::SparseBuilder b(4096);
//   b.RawBlocks(2, /*seed=*/1).Fill(3, 0xAABBCCDD).DontCare(1).Crc();
//   std::vector<uint8_t> simg = b.Build();       // total_blks 6, 4 chunks
//   const std::vector<uint8_t>& img = b.expanded();  // 6 * 4096 bytes, DONT_CARE as zeros
//
// Header fields come from header() at Build() time; total_blks and
// total_chunks are computed unless set with SetTotalBlocks / SetTotalChunks.
// Larger headers (file_hdr_sz > 28, chunk_hdr_sz > 12) are padded with 0xEE.
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "base/crc32.h"
#include "base/endian.h"
#include "sparse/format.h"

namespace flashpipe::testing {

class SparseBuilder {
 public:
  explicit SparseBuilder(uint32_t blk_sz = 4096) { header_.blk_sz = blk_sz; }

  // REQUIRES: data.size() is a multiple of blk_sz.
  SparseBuilder& Raw(std::span<const uint8_t> data) {
    Add(sparse::kChunkRaw, static_cast<uint32_t>(data.size() / header_.blk_sz), {data.begin(), data.end()});
    expanded_.insert(expanded_.end(), data.begin(), data.end());
    return *this;
  }
  // `blocks` blocks of pseudo-random bytes derived from `seed`.
  SparseBuilder& RawBlocks(uint32_t blocks, uint32_t seed) {
    return Raw(RandomBytes(size_t{blocks} * header_.blk_sz, seed));
  }
  SparseBuilder& Fill(uint32_t blocks, uint32_t pattern) {
    std::vector<uint8_t> p(4);
    StoreLE<uint32_t>(p.data(), pattern);
    Add(sparse::kChunkFill, blocks, p);
    for (size_t i = 0; i < size_t{blocks} * header_.blk_sz / 4; ++i) expanded_.insert(expanded_.end(), p.begin(), p.end());
    return *this;
  }
  SparseBuilder& DontCare(uint32_t blocks) {
    Add(sparse::kChunkDontCare, blocks, {});
    expanded_.resize(expanded_.size() + size_t{blocks} * header_.blk_sz, 0);
    return *this;
  }
  // A CRC32 chunk holding the correct CRC of the expanded image so far.
  SparseBuilder& Crc() { return CrcValue(expanded_crc()); }
  SparseBuilder& CrcValue(uint32_t value, uint32_t chunk_sz = 0) {
    std::vector<uint8_t> p(4);
    StoreLE<uint32_t>(p.data(), value);
    Add(sparse::kChunkCrc32, chunk_sz, p);
    return *this;
  }
  // Any chunk, valid or not; total_sz defaults to chunk_hdr_sz + payload size.
  // Does not change expanded(); the caller knows what it means.
  SparseBuilder& Chunk(uint16_t type, uint32_t chunk_sz, std::vector<uint8_t> payload,
                       std::optional<uint32_t> total_sz = std::nullopt) {
    Add(type, chunk_sz, std::move(payload), total_sz);
    return *this;
  }
  // Bytes appended after the last chunk.
  SparseBuilder& Trailer(std::vector<uint8_t> bytes) {
    trailer_ = std::move(bytes);
    return *this;
  }
  SparseBuilder& SetTotalBlocks(uint32_t n) { total_blks_ = n; return *this; }
  SparseBuilder& SetTotalChunks(uint32_t n) { total_chunks_ = n; return *this; }

  // Magic, versions, header sizes, blk_sz (as written), image_checksum.
  sparse::FileHeader& header() { return header_; }

  uint32_t blocks() const { return static_cast<uint32_t>(expanded_.size() / header_.blk_sz); }
  size_t chunk_count() const { return chunks_.size(); }
  const std::vector<uint8_t>& expanded() const { return expanded_; }
  uint32_t expanded_crc() const { return Crc32Update(0, expanded_.data(), expanded_.size()); }

  // Input offset of chunk `i`'s header in Build()'s output.
  uint64_t ChunkOffset(size_t i) const {
    uint64_t off = header_.file_hdr_sz;
    for (size_t k = 0; k < i; ++k) off += header_.chunk_hdr_sz + chunks_[k].payload.size();
    return off;
  }

  std::vector<uint8_t> Build() const {
    sparse::FileHeader h = header_;
    h.total_blks = total_blks_ ? *total_blks_ : blocks();
    h.total_chunks = total_chunks_.value_or(static_cast<uint32_t>(chunks_.size()));
    std::vector<uint8_t> out(std::max<size_t>(h.file_hdr_sz, sparse::kFileHeaderSize), 0xEE);
    sparse::SerializeFileHeader(h, std::span<uint8_t, sparse::kFileHeaderSize>(out.data(), sparse::kFileHeaderSize));
    out.resize(h.file_hdr_sz);  // a file_hdr_sz below 28 truncates the header
    for (const ChunkSpec& c : chunks_) {
      size_t at = out.size();
      out.resize(at + std::max<size_t>(h.chunk_hdr_sz, sparse::kChunkHeaderSize), 0xEE);
      sparse::ChunkHeader ch{c.type, 0, c.chunk_sz,
                             c.total_sz.value_or(static_cast<uint32_t>(h.chunk_hdr_sz + c.payload.size()))};
      sparse::SerializeChunkHeader(ch, std::span<uint8_t, sparse::kChunkHeaderSize>(out.data() + at, sparse::kChunkHeaderSize));
      out.resize(at + h.chunk_hdr_sz);
      out.insert(out.end(), c.payload.begin(), c.payload.end());
    }
    out.insert(out.end(), trailer_.begin(), trailer_.end());
    return out;
  }

  static std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      v[i] = static_cast<uint8_t>(x >> 24);
    }
    return v;
  }

 private:
  struct ChunkSpec {
    uint16_t type;
    uint32_t chunk_sz;
    std::vector<uint8_t> payload;
    std::optional<uint32_t> total_sz;
  };
  void Add(uint16_t type, uint32_t chunk_sz, std::vector<uint8_t> payload, std::optional<uint32_t> total_sz = {}) {
    chunks_.push_back({type, chunk_sz, std::move(payload), total_sz});
  }

  sparse::FileHeader header_;
  std::optional<uint32_t> total_blks_;
  std::optional<uint32_t> total_chunks_;
  std::vector<ChunkSpec> chunks_;
  std::vector<uint8_t> trailer_;
  std::vector<uint8_t> expanded_;
};

}  // namespace flashpipe::testing
