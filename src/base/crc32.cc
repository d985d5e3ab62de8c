#include "base/crc32.h"

#include <isa-l/crc.h>
#include <zlib.h>

namespace flashpipe {

uint32_t Crc32Update(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  // ISA-L takes a uint64_t length; feed it in one call.
  return crc32_gzip_refl(crc, p, size);
}

uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return static_cast<uint32_t>(crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(len_b)));
}

uint32_t Crc32AppendPattern(uint32_t crc, uint32_t pattern, uint64_t count) {
  unsigned char word[4] = {static_cast<unsigned char>(pattern), static_cast<unsigned char>(pattern >> 8),
                           static_cast<unsigned char>(pattern >> 16),
                           static_cast<unsigned char>(pattern >> 24)};
  // Binary doubling: `run` is the CRC (from 0) of 2^k copies, `run_len` bytes.
  uint32_t run = Crc32Update(0, word, 4);
  uint64_t run_len = 4;
  while (count > 0) {
    if (count & 1) crc = static_cast<uint32_t>(crc32_combine64(crc, run, static_cast<z_off64_t>(run_len)));
    count >>= 1;
    if (count == 0) break;
    run = static_cast<uint32_t>(crc32_combine64(run, run, static_cast<z_off64_t>(run_len)));
    run_len *= 2;
  }
  return crc;
}

}  // namespace flashpipe
