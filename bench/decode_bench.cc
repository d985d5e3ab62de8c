// decode_bench: how fast the sparse decoder runs from memory, CRC checking on
// and off, on a RAW-heavy image built in memory (64 MiB RAW chunks of random
// bytes, a FILL and a DONT_CARE between them, a CRC32 chunk at the end).
// The sink only touches the bytes it is given (a running xor of the first
// byte of every piece), so this measures parsing plus CRC, not storage.
//   decode_bench [SIZE_MIB=1024] [RUNS=5] [SLICE_KIB=4096]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "base/crc32.h"
#include "base/endian.h"
#include "sparse/decoder.h"

using namespace flashpipe;
using namespace flashpipe::sparse;

namespace {

struct NullSink : Sink {
  Status OnRaw(uint64_t, std::span<const uint8_t> d) override {
    touched ^= d[0];
    return Status::Ok();
  }
  Status OnFill(uint64_t, uint64_t, uint32_t) override { return Status::Ok(); }
  Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }
  uint8_t touched = 0;
};

void Put32(std::vector<uint8_t>& v, uint32_t x) {
  uint8_t b[4];
  StoreLE<uint32_t>(b, x);
  v.insert(v.end(), b, b + 4);
}

void ChunkHeader(std::vector<uint8_t>& v, uint16_t type, uint32_t blocks, uint32_t total) {
  uint8_t b[12];
  SerializeChunkHeader({type, 0, blocks, total}, b);
  v.insert(v.end(), b, b + 12);
}

std::vector<uint8_t> BuildImage(uint64_t raw_bytes, uint64_t* expanded) {
  const uint32_t blk = 4096, raw_blocks = (64u << 20) / blk;
  std::vector<uint8_t> img(kFileHeaderSize);
  std::mt19937_64 rng(1);
  uint32_t crc = 0, chunks = 0, total_blks = 0;
  for (uint64_t done = 0; done < raw_bytes; done += uint64_t{raw_blocks} * blk) {
    ChunkHeader(img, kChunkRaw, raw_blocks, 12 + raw_blocks * blk);
    size_t at = img.size();
    img.resize(at + size_t{raw_blocks} * blk);
    for (size_t i = at; i < img.size(); i += 8) StoreLE<uint64_t>(img.data() + i, rng());
    crc = Crc32Update(crc, img.data() + at, size_t{raw_blocks} * blk);
    ChunkHeader(img, kChunkFill, 16, 16);
    Put32(img, 0xA5A5A5A5);
    crc = Crc32AppendPattern(crc, 0xA5A5A5A5, 16 * blk / 4);
    ChunkHeader(img, kChunkDontCare, 16, 12);
    crc = Crc32AppendPattern(crc, 0, 16 * blk / 4);
    chunks += 3;
    total_blks += raw_blocks + 32;
  }
  ChunkHeader(img, kChunkCrc32, 0, 16);
  Put32(img, crc);
  FileHeader h;
  h.blk_sz = blk;
  h.total_blks = total_blks;
  h.total_chunks = chunks + 1;
  SerializeFileHeader(h, std::span<uint8_t, kFileHeaderSize>(img.data(), kFileHeaderSize));
  *expanded = uint64_t{total_blks} * blk;
  return img;
}

double DecodeSeconds(const std::vector<uint8_t>& img, bool crc, size_t slice) {
  NullSink sink;
  Decoder d(&sink, {.check_crc = crc});
  auto t0 = std::chrono::steady_clock::now();
  for (size_t pos = 0; pos < img.size(); pos += slice) {
    Status s = d.Feed({img.data() + pos, std::min(slice, img.size() - pos)});
    if (!s.ok()) {
      std::fprintf(stderr, "decode failed: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  Status s = d.Finish();
  auto t1 = std::chrono::steady_clock::now();
  if (!s.ok()) {
    std::fprintf(stderr, "decode failed: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  return std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  size_t slice = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 4096) << 10;
  uint64_t expanded = 0;
  std::vector<uint8_t> img = BuildImage(mib << 20, &expanded);
  std::printf("decode_bench: %.1f MiB sparse image in memory (%.1f MiB expanded), RAW-heavy, %d runs, %zu KiB slices\n",
              img.size() / 1048576.0, expanded / 1048576.0, runs, slice >> 10);
  for (bool crc : {true, false}) {
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) t.push_back(DecodeSeconds(img, crc, slice));
    std::sort(t.begin(), t.end());
    double med = t[t.size() / 2];
    std::printf("  check_crc=%-5s%s median %.3f s  input %.2f GB/s  output %.2f GB/s  (min %.3f s, max %.3f s)\n",
                crc ? "true" : "false", crc ? "" : " (RAW passed through untouched)", med, img.size() / med / 1e9, expanded / med / 1e9, t.front(), t.back());
  }
  return 0;
}
