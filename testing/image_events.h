// Random image events for the engine tests: random bytes, one sink event
// kept so a sequence can be replayed on an in-memory model of the medium, and
// random parts mixing RAW, FILL and DONT_CARE. Header-only, like every fake in
// testing/ (temp dirs and whole-file reads are in testing/temp_dir.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace flashpipe::testing {

inline std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = rng();
    for (size_t k = 0; k < 8 && i + k < n; ++k) v[i + k] = static_cast<uint8_t>(r >> (8 * k));
  }
  return v;
}

// One sink event, kept so the same sequence can be replayed on a model.
struct Event {
  enum Kind { kRaw, kFill, kSkip } kind = kRaw;
  uint64_t offset = 0, length = 0;
  uint32_t pattern = 0;
  std::vector<uint8_t> data;  // kRaw
};

// What the image leaves on a medium that held `model` before.
inline void ApplyToModel(const Event& e, std::vector<uint8_t>& model) {
  if (model.size() < e.offset + e.length) model.resize(e.offset + e.length);
  if (e.kind == Event::kRaw) std::copy(e.data.begin(), e.data.end(), model.begin() + e.offset);
  if (e.kind == Event::kFill)
    for (uint64_t i = 0; i < e.length; ++i) model[e.offset + i] = static_cast<uint8_t>(e.pattern >> (8 * (i % 4)));
}

// A random part covering [0, blocks*blk): runs of RAW, FILL (zero or not,
// some long enough to become zeroout/pattern requests) and DONT_CARE.
inline std::vector<Event> RandomPart(std::mt19937_64& rng, uint32_t blk, uint64_t blocks) {
  std::vector<Event> out;
  uint64_t at = 0, end = blocks * blk;
  while (at < end) {
    uint64_t left = (end - at) / blk;
    uint64_t n = 1 + rng() % std::min<uint64_t>(left, rng() % 4 == 0 ? 400 : 24);
    Event e;
    e.offset = at;
    e.length = n * blk;
    switch (rng() % 5) {
      case 0: case 1:
        e.kind = Event::kRaw;
        e.data = RandomBytes(rng, e.length);
        break;
      case 2:
        e.kind = Event::kFill;
        e.pattern = 0;
        break;
      case 3:
        e.kind = Event::kFill;
        e.pattern = static_cast<uint32_t>(rng()) | 1;
        break;
      default:
        e.kind = Event::kSkip;
    }
    out.push_back(std::move(e));
    at += n * blk;
  }
  return out;
}

}  // namespace flashpipe::testing
