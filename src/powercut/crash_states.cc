#include "powercut/crash_states.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace flashpipe::powercut {
namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

class Enumerator {
 public:
  Enumerator(const WriteLog& log, const Budget& budget) : log_(log), b_(budget), rng_(budget.seed) {
    const auto& es = log.entries();
    writes_.assign(es.size() + 1, 0);
    flushes_.assign(es.size() + 1, 0);
    marks_.assign(es.size() + 1, 0);
    for (size_t i = 0; i < es.size(); ++i) {
      writes_[i + 1] = writes_[i] + (es[i].changes_medium() ? 1 : 0);
      flushes_[i + 1] = flushes_[i] + (es[i].has_flush() ? 1 : 0);
      marks_[i + 1] = marks_[i] + (es[i].is_mark() ? 1 : 0);
    }
  }

  Enumeration Run() {
    const auto& es = log_.entries();
    size_t start = 0;
    for (size_t i = 1; i <= es.size(); ++i) {
      if (i == es.size() || es[i].has_flush()) {
        Window(start, i);
        start = i;
      }
    }
    if (es.empty()) Window(0, 0);
    out_.generated = out_.states.size();
    ApplyBudget();
    return std::move(out_);
  }

 private:
  bool Volatile(size_t i) const {
    const LogEntry& e = log_.entries()[i];
    return e.changes_medium() && !e.is_fua();
  }

  CrashState At(size_t start, size_t cut, std::vector<size_t> landed, size_t volatile_writes) const {
    CrashState s;
    s.cut = cut;
    s.window = start;
    s.write_index = writes_[cut];
    s.flush_index = flushes_[cut];
    s.acks = marks_[cut];
    s.landed = std::move(landed);
    s.volatile_writes = volatile_writes;
    return s;
  }

  void Add(CrashState s, bool anchor) {
    s.anchor = anchor;
    out_.states.push_back(std::move(s));
  }

  // Entries [start, end): cuts (start, end], and cut 0 for the first window.
  void Window(size_t start, size_t end) {
    const auto& es = log_.entries();
    std::vector<size_t> vol;
    for (size_t i = start; i < end; ++i) {
      if (Volatile(i)) vol.push_back(i);
    }
    ++out_.windows;
    out_.largest_window = std::max<uint64_t>(out_.largest_window, vol.size());
    const bool small = vol.size() <= b_.all_subsets_up_to;
    std::vector<size_t> seen;  // volatile writes before the cut
    std::vector<size_t> tear_cuts;
    const size_t first_cut = start == 0 ? 0 : start + 1;
    for (size_t cut = first_cut; cut <= end; ++cut) {
      const bool first = cut == first_cut;
      const LogEntry* prev = cut > 0 && !first ? &es[cut - 1] : nullptr;
      if (first && cut > 0 && Volatile(cut - 1)) seen.push_back(cut - 1);  // a flush carrying data
      if (prev != nullptr && Volatile(cut - 1)) seen.push_back(cut - 1);
      const bool new_write = prev != nullptr && Volatile(cut - 1);
      const bool mark_next = cut < es.size() && es[cut].is_mark();
      const bool after_mark = prev != nullptr && prev->is_mark();
      const bool fua = prev != nullptr && prev->changes_medium() && prev->is_fua();
      const bool anchor = first || cut == end || mark_next || after_mark;
      if (prev != nullptr && !new_write && !after_mark && !fua && !prev->changes_medium()) continue;
      if (new_write && es[cut - 1].length > log_.sector_size()) tear_cuts.push_back(cut);
      if (small) {
        Subsets(start, cut, seen, new_write, anchor);
        continue;
      }
      Add(At(start, cut, seen, seen.size()), anchor);
      if (first || after_mark || fua || mark_next || cut == end) {
        if (!seen.empty()) Add(At(start, cut, {}, seen.size()), anchor);
        for (unsigned r = 0; r < b_.random_subsets && seen.size() > 1; ++r) {
          Add(At(start, cut, RandomSubset(seen), seen.size()), false);
        }
      }
    }
    Tears(start, tear_cuts);
  }

  // Every subset of `seen` (only those holding its newest write after a plain write).
  void Subsets(size_t start, size_t cut, const std::vector<size_t>& seen, bool new_write, bool anchor) {
    const uint64_t n = seen.size();
    for (uint64_t mask = 0; mask < (uint64_t{1} << n); ++mask) {
      if (new_write && (mask & (uint64_t{1} << (n - 1))) == 0) continue;
      std::vector<size_t> landed;
      for (uint64_t i = 0; i < n; ++i) {
        if (mask & (uint64_t{1} << i)) landed.push_back(seen[i]);
      }
      const bool full = landed.size() == n, empty = landed.empty();
      Add(At(start, cut, std::move(landed), n), anchor && (full || empty));
    }
  }

  std::vector<size_t> RandomSubset(const std::vector<size_t>& from) {
    std::vector<size_t> out;
    for (size_t v : from) {
      if (rng_() & 1) out.push_back(v);
    }
    return out;
  }

  void Tears(size_t start, const std::vector<size_t>& cuts) {
    for (unsigned t = 0; t < b_.tears && !cuts.empty(); ++t) {
      const size_t cut = cuts[rng_() % cuts.size()];
      std::vector<size_t> seen;
      for (size_t i = start; i < cut; ++i) {
        if (Volatile(i)) seen.push_back(i);
      }
      std::vector<size_t> landed = (t % 2 == 1 && seen.size() > 1) ? RandomSubset(seen) : seen;
      if (landed.empty()) landed.push_back(seen.back());
      size_t torn = (t % 2 == 1) ? landed[rng_() % landed.size()] : landed.back();
      const LogEntry& e = log_.entries()[torn];
      const uint64_t unit = std::max<uint64_t>(b_.tear_unit, log_.sector_size());
      const uint64_t first_unit = e.offset / unit, units = (e.offset + e.length + unit - 1) / unit - first_unit;
      if (units < 2) continue;  // written whole
      Ranges pick = (t / 2) % 2 == 0 ? Ranges{{0, 1 + rng_() % (units - 1)}} : RandomRuns(units);
      CrashState s = At(start, cut, std::move(landed), seen.size());
      s.torn = torn;
      s.torn_sectors = UnitsToSectors(pick, e, first_unit, unit);
      Add(std::move(s), false);
    }
  }

  // Runs of whole units of the device, as sectors of the write [first, end).
  Ranges UnitsToSectors(const Ranges& units, const LogEntry& e, uint64_t first_unit, uint64_t unit) const {
    const uint64_t ss = log_.sector_size(), n = e.length / ss;
    Ranges out;
    for (const auto& [a, b] : units) {
      const uint64_t from = (first_unit + a) * unit, to = (first_unit + b) * unit;
      const uint64_t s0 = from <= e.offset ? 0 : (from - e.offset) / ss;
      const uint64_t s1 = std::min(n, (to - e.offset) / ss);
      if (s0 < s1) out.emplace_back(s0, s1);
    }
    return out;
  }

  // Runs of sectors, each kept or not; never all, never none.
  Ranges RandomRuns(uint64_t sectors) {
    Ranges out;
    uint64_t kept = 0;
    for (uint64_t at = 0; at < sectors;) {
      const uint64_t len = std::min<uint64_t>(sectors - at, 1 + rng_() % std::max<uint64_t>(1, sectors / 4));
      if (rng_() & 1) {
        out.emplace_back(at, at + len);
        kept += len;
      }
      at += len;
    }
    if (kept == 0) out = {{0, 1}};
    if (kept == sectors) out = {{0, sectors - 1}};
    return out;
  }

  void ApplyBudget() {
    auto& st = out_.states;
    if (st.size() <= b_.max_states) return;
    std::vector<CrashState> anchors, rest;
    for (auto& s : st) (s.anchor ? anchors : rest).push_back(std::move(s));
    std::shuffle(rest.begin(), rest.end(), rng_);
    if (anchors.size() > b_.max_states) {
      std::shuffle(anchors.begin(), anchors.end(), rng_);
      anchors.resize(b_.max_states);
      rest.clear();
    }
    rest.resize(std::min<size_t>(rest.size(), b_.max_states - anchors.size()));
    st = std::move(anchors);
    st.insert(st.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
    std::stable_sort(st.begin(), st.end(), [](const CrashState& a, const CrashState& b) { return a.cut < b.cut; });
  }

  const WriteLog& log_;
  const Budget& b_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> writes_, flushes_, marks_;
  Enumeration out_;
};

std::string Join(const std::vector<size_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 12; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > 12) s += fmt::format(",... ({} in all)", v.size());
  return s;
}

}  // namespace

std::string CrashState::Describe() const {
  std::string s = fmt::format("cut after {} log entries (write {}, flush {}, {} acks): ", cut, write_index,
                              flush_index, acks);
  if (volatile_writes == 0) return s + "no write since the last flush";
  s += fmt::format("{} of {} writes since the last flush landed", landed.size(), volatile_writes);
  if (!landed.empty() && landed.size() < volatile_writes) s += fmt::format(" (entries {})", Join(landed));
  if (torn != SIZE_MAX) {
    std::string runs;
    for (const auto& [a, b] : torn_sectors) runs += fmt::format("{}{}-{}", runs.empty() ? "" : ",", a, b - 1);
    s += fmt::format(", entry {} torn (sectors {} landed)", torn, runs);
  }
  return s;
}

Enumeration EnumerateCrashStates(const WriteLog& log, const Budget& budget) { return Enumerator(log, budget).Run(); }

DeviceReplay::DeviceReplay(const WriteLog& log, std::vector<uint8_t> initial)
    : log_(log), initial_(std::move(initial)), image_(initial_) {}

void DeviceReplay::Apply(const LogEntry& e, const Ranges* sectors, bool save) {
  const uint64_t ss = log_.sector_size();
  const auto data = log_.data(e);
  Ranges whole{{0, e.length / ss}};
  for (const auto& [first, end] : sectors != nullptr ? *sectors : whole) {
    const uint64_t at = e.offset + first * ss, len = (end - first) * ss;
    uint8_t* dst = image_.data() + at;
    if (save) undo_.emplace_back(at, std::vector<uint8_t>(dst, dst + len));
    if (e.is_discard()) {
      std::memset(dst, 0, len);
    } else {
      std::memcpy(dst, data.data() + first * ss, len);
    }
  }
}

void DeviceReplay::Undo() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
    std::copy(it->second.begin(), it->second.end(), image_.begin() + static_cast<std::ptrdiff_t>(it->first));
  }
  undo_.clear();
}

std::span<const uint8_t> DeviceReplay::Build(const CrashState& state) {
  Undo();
  const auto& es = log_.entries();
  for (; base_ < state.window; ++base_) {
    if (es[base_].changes_medium()) Apply(es[base_], nullptr, false);
  }
  size_t next = 0;
  for (size_t i = state.window; i < state.cut; ++i) {
    const LogEntry& e = es[i];
    if (!e.changes_medium()) continue;
    const bool landed = next < state.landed.size() && state.landed[next] == i;
    if (landed) ++next;
    if (!landed && !e.is_fua()) continue;
    Apply(e, i == state.torn ? &state.torn_sectors : nullptr, true);
  }
  return image_;
}

std::vector<uint8_t> DeviceReplay::Ordered(size_t cut) const {
  std::vector<uint8_t> out = initial_;
  const uint64_t ss = log_.sector_size();
  for (size_t i = 0; i < cut && i < log_.entries().size(); ++i) {
    const LogEntry& e = log_.entries()[i];
    if (!e.changes_medium()) continue;
    if (e.is_discard()) {
      std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(e.offset), e.length, 0);
    } else {
      const auto d = log_.data(e);
      std::copy(d.begin(), d.end(), out.begin() + static_cast<std::ptrdiff_t>(e.offset));
    }
  }
  (void)ss;
  return out;
}

}  // namespace flashpipe::powercut
