// Helpers for the output tests: a RunSink that records what it is given,
// sample images with data, zero and uniform blocks, and a feeder that hands
// an image to a ZeroScan in pieces cut at odd places.
#pragma once

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "io/image_reader.h"
#include "output/run_sink.h"
#include "output/zero_scan.h"

namespace flashpipe::output::test {

struct Run {
  enum Kind { kData, kZeroRead, kHole } kind;
  uint64_t offset, length;
};

class RunRecorder : public RunSink {
 public:
  std::vector<uint8_t> image;  // zeros where runs said zeros
  std::vector<Run> runs;
  uint64_t finished_length = UINT64_MAX;

  Status OnData(uint64_t offset, std::span<const uint8_t> data) override {
    Grow(offset + data.size());
    std::memcpy(image.data() + offset, data.data(), data.size());
    runs.push_back({Run::kData, offset, data.size()});
    return Status::Ok();
  }
  Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) override {
    Grow(offset + length);
    std::memset(image.data() + offset, 0, length);
    runs.push_back({kind == ZeroKind::kHole ? Run::kHole : Run::kZeroRead, offset, length});
    return Status::Ok();
  }
  Status Finish(uint64_t length) override {
    finished_length = length;
    return Status::Ok();
  }

 private:
  void Grow(uint64_t end) {
    if (image.size() < end) image.resize(end, 0xEE);
  }
};

// `blocks` 4 KiB blocks (the last one `tail` bytes short): random data, zero
// blocks, and blocks of one repeated word, in runs.
inline std::vector<uint8_t> SampleImage(uint64_t blocks, uint32_t seed, uint64_t tail = 0) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(blocks * 4096 - tail);
  for (uint64_t b = 0; b < blocks;) {
    uint64_t n = 1 + rng() % 40;
    int kind = static_cast<int>(rng() % 4);
    uint32_t word = static_cast<uint32_t>(rng()) | 1;
    for (uint64_t i = b * 4096; i < std::min<uint64_t>((b + n) * 4096, v.size()); i += 4) {
      uint32_t w = kind == 0 ? 0 : kind == 1 ? word : static_cast<uint32_t>(rng());
      std::memcpy(v.data() + i, &w, std::min<size_t>(4, v.size() - i));
    }
    b += n;
  }
  return v;
}

// Feeds `image` to `scan` in pieces of random sizes (multiples of 512), the
// ranges in `holes` (512-aligned) as hole pieces.
inline Status FeedPieces(ZeroScan& scan, const std::vector<uint8_t>& image,
                         const std::vector<std::pair<uint64_t, uint64_t>>& holes, uint32_t seed) {
  std::mt19937_64 rng(seed);
  uint64_t at = 0;
  size_t h = 0;
  while (at < image.size()) {
    if (h < holes.size() && holes[h].first == at) {
      FP_RETURN_IF_ERROR(scan.Piece({at, holes[h].second, true, {}}, 0));
      at += holes[h++].second;
      continue;
    }
    uint64_t limit = h < holes.size() ? holes[h].first : image.size();
    uint64_t n = std::min<uint64_t>(limit - at, 512 * (1 + rng() % 40));
    FP_RETURN_IF_ERROR(scan.Piece({at, n, false, {image.data() + at, n}}, 0));
    at += n;
  }
  return scan.Finish();
}

}  // namespace flashpipe::output::test
