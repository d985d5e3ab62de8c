#include "io/digest_map.h"

#include "base/crc32.h"

namespace flashpipe::io {

std::vector<uint32_t> DigestMap::BlockCrcs(std::span<const uint8_t> data) const {
  std::vector<uint32_t> out(data.size() / block_);
  for (size_t i = 0; i < out.size(); ++i) out[i] = Crc32Update(0, data.data() + i * block_, block_);
  return out;
}

void DigestMap::Erase(uint64_t begin, uint64_t end) {
  auto it = map_.lower_bound(begin);
  if (it != map_.begin() && std::prev(it)->second.end > begin) --it;
  while (it != map_.end() && it->first < end) {
    uint64_t b = it->first;
    Extent e = std::move(it->second);
    it = map_.erase(it);
    if (b < begin) {  // keep the head
      Extent head = e;
      head.end = begin;
      if (!head.is_pattern) head.crcs.resize((begin - b) / block_);
      map_.emplace(b, std::move(head));
    }
    if (e.end > end) {  // keep the tail
      Extent tail = std::move(e);
      if (!tail.is_pattern) tail.crcs.erase(tail.crcs.begin(), tail.crcs.begin() + (end - b) / block_);
      it = map_.emplace(end, std::move(tail)).first;
      break;
    }
  }
}

void DigestMap::PutBlocks(uint64_t offset, std::vector<uint32_t> crcs) {
  uint64_t end = offset + crcs.size() * block_;
  if (crcs.empty()) return;
  Erase(offset, end);
  auto it = map_.lower_bound(offset);
  if (it != map_.begin()) {
    auto prev = std::prev(it);
    if (!prev->second.is_pattern && prev->second.end == offset) {  // grow the previous run
      prev->second.crcs.insert(prev->second.crcs.end(), crcs.begin(), crcs.end());
      prev->second.end = end;
      return;
    }
  }
  map_.emplace(offset, Extent{end, false, 0, std::move(crcs)});
}

void DigestMap::PutPattern(uint64_t begin, uint64_t end, uint32_t pattern) {
  if (begin >= end) return;
  Erase(begin, end);
  auto it = map_.lower_bound(begin);
  if (it != map_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.is_pattern && prev->second.pattern == pattern && prev->second.end == begin) {
      prev->second.end = end;
      return;
    }
  }
  map_.emplace(begin, Extent{end, true, pattern, {}});
}

uint64_t DigestMap::memory_bytes() const {
  uint64_t n = 0;
  for (const auto& [b, e] : map_) n += 64 + e.crcs.capacity() * sizeof(uint32_t);
  return n;
}

}  // namespace flashpipe::io
