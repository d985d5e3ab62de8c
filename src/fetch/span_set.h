// SpanSet: which bytes of a file are here, as sorted, disjoint, merged
// [begin, end) spans. Pure; thread-compatible (RemoteFile locks it).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "fetch/http_parse.h"

namespace flashpipe::fetch {

class SpanSet {
 public:
  SpanSet() = default;
  explicit SpanSet(const std::vector<ByteSpan>& spans) {
    for (const ByteSpan& s : spans) Add(s);
  }
  void Add(ByteSpan s);
  // The end of the stretch held from `pos` on (`pos` itself when it is not held).
  uint64_t ContiguousEnd(uint64_t pos) const;
  bool Contains(ByteSpan s) const { return s.begin >= s.end || ContiguousEnd(s.begin) >= s.end; }
  // The parts of `wanted` (sorted, disjoint) not held.
  std::vector<ByteSpan> Missing(const std::vector<ByteSpan>& wanted) const;
  // Bytes of `wanted` held.
  uint64_t Held(const std::vector<ByteSpan>& wanted) const;
  std::vector<ByteSpan> spans() const;
  uint64_t bytes() const { return bytes_; }

 private:
  std::map<uint64_t, uint64_t> spans_;  // begin -> end
  uint64_t bytes_ = 0;
};

}  // namespace flashpipe::fetch
