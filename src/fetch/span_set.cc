#include "fetch/span_set.h"

#include <algorithm>

namespace flashpipe::fetch {

void SpanSet::Add(ByteSpan s) {
  if (s.begin >= s.end) return;
  auto it = spans_.upper_bound(s.begin);
  if (it != spans_.begin() && std::prev(it)->second >= s.begin) --it;
  while (it != spans_.end() && it->first <= s.end) {
    s.begin = std::min(s.begin, it->first);
    s.end = std::max(s.end, it->second);
    bytes_ -= it->second - it->first;
    it = spans_.erase(it);
  }
  spans_[s.begin] = s.end;
  bytes_ += s.end - s.begin;
}

uint64_t SpanSet::ContiguousEnd(uint64_t pos) const {
  auto it = spans_.upper_bound(pos);
  if (it == spans_.begin()) return pos;
  --it;
  return it->second > pos ? it->second : pos;
}

std::vector<ByteSpan> SpanSet::Missing(const std::vector<ByteSpan>& wanted) const {
  std::vector<ByteSpan> out;
  for (const ByteSpan& w : wanted) {
    uint64_t at = w.begin;
    while (at < w.end) {
      uint64_t held = ContiguousEnd(at);
      if (held > at) {
        at = held;
        continue;
      }
      auto next = spans_.upper_bound(at);
      uint64_t stop = next == spans_.end() ? w.end : std::min(w.end, next->first);
      out.push_back({at, stop});
      at = stop;
    }
  }
  return out;
}

uint64_t SpanSet::Held(const std::vector<ByteSpan>& wanted) const {
  uint64_t total = 0;
  for (const ByteSpan& w : wanted) total += w.size();
  for (const ByteSpan& m : Missing(wanted)) total -= m.size();
  return total;
}

std::vector<ByteSpan> SpanSet::spans() const {
  std::vector<ByteSpan> out;
  for (const auto& [b, e] : spans_) out.push_back({b, e});
  return out;
}

}  // namespace flashpipe::fetch
