// CRC-32 with the zlib / IEEE 802.3 polynomial (reflected, init 0, final xor),
// the checksum Android sparse CRC32 chunks carry. Crc32Update chains like
// zlib's crc32(): Crc32Update(Crc32Update(0, a), b) == CRC of a||b.
// Backed by ISA-L's crc32_gzip_refl (several GB/s); combining uses zlib's
// O(log n) crc32_combine so fills and holes cost no per-byte work.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flashpipe {

uint32_t Crc32Update(uint32_t crc, const void* data, size_t size);
// CRC of a||b given crc(a), crc(b) and len(b). REQUIRES: len_b < 2^63.
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
// CRC state after appending `count` copies of the 4-byte little-endian
// `pattern` to a stream whose CRC so far is `crc`. O(log count).
// REQUIRES: count < 2^60 (the decoder stops tracking CRCs past that).
uint32_t Crc32AppendPattern(uint32_t crc, uint32_t pattern, uint64_t count);

}  // namespace flashpipe
