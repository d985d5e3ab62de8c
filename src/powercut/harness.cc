#include "powercut/harness.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <map>

#include "base/fd_io.h"
#include "base/sha256.h"
#include "base/unique_fd.h"

namespace flashpipe::powercut {

Result<Reading> Checker::ReadSnapshot(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("snapshot {}", path));
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  FP_RETURN_IF_ERROR(PreadExact(fd.get(), bytes, 0, path));
  return Read(bytes);
}

namespace {

std::string Quote(const Expectation& e) { return e.any ? "anything" : "'" + e.reading.text + "'"; }

bool Matches(const Reading& r, const Expectation& e) { return e.any || (!r.fail_closed && r.text == e.reading.text); }

}  // namespace

Status Judge(const Reading& r, size_t acks, std::span<const Expectation> expect, bool fail_closed_ok) {
  if (acks >= expect.size()) return Internal(fmt::format("{} acks, {} expectations", acks, expect.size()));
  const bool last = acks + 1 == expect.size();
  if (Matches(r, expect[acks]) || (!last && Matches(r, expect[acks + 1]))) return Status::Ok();
  const bool changing = !last && (expect[acks].any || expect[acks + 1].any ||
                                  expect[acks].reading.text != expect[acks + 1].reading.text);
  if (r.fail_closed && fail_closed_ok && changing) return Status::Ok();
  std::string after = acks == 0 ? "before the first step was acknowledged"
                                 : fmt::format("after step {} ('{}') was acknowledged", acks, expect[acks].label);
  std::string want = last ? Quote(expect[acks]) : fmt::format("{} or {}", Quote(expect[acks]), Quote(expect[acks + 1]));
  return Mismatch(fmt::format("reads '{}'{} {}; acceptable: {}", r.text, r.fail_closed ? " (fail-closed)" : "", after,
                              want));
}

std::string HarnessReport::Summary() const {
  return fmt::format(
      "{}: {} writes, {} flushes, {} FUA, {} marks, {} windows (largest {} writes); {} states checked of {} planned "
      "({} found), {} distinct, {} fail-closed, {} unacceptable{}; {:.1f} s",
      name, writes, flushes, fua, marks, windows, largest_window, checked, planned, generated, distinct, fail_closed,
      unacceptable, out_of_time ? "; time budget reached" : "", seconds);
}

Result<HarnessReport> RunHarness(const WriteLog& log, std::vector<uint8_t> initial, Checker& checker,
                                 std::span<const Expectation> expect, const HarnessOptions& options) {
  if (expect.size() != log.marks() + 1) {
    return InvalidArgument(fmt::format("{}: the log holds {} marks, so {} expectations are needed, not {}",
                                       checker.name(), log.marks(), log.marks() + 1, expect.size()));
  }
  const auto start = std::chrono::steady_clock::now();
  HarnessReport rep;
  rep.name = std::string(checker.name());
  rep.writes = log.writes();
  rep.flushes = log.flushes();
  rep.marks = log.marks();
  for (const auto& e : log.entries()) rep.fua += e.changes_medium() && e.is_fua() ? 1 : 0;
  Enumeration en = EnumerateCrashStates(log, options.budget);
  rep.windows = en.windows;
  rep.largest_window = en.largest_window;
  rep.generated = en.generated;
  rep.planned = en.states.size();
  auto [roff, rlen] = checker.region();
  DeviceReplay replay(log, std::move(initial));
  std::map<Sha256::Digest, Reading> cache;
  for (const CrashState& s : en.states) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > options.max_seconds) {
      rep.out_of_time = true;
      break;
    }
    std::span<const uint8_t> device = replay.Build(s);
    std::span<const uint8_t> region = rlen == 0 ? device : device.subspan(roff, rlen);
    Sha256 h;
    h.Update(region);
    auto key = h.Final();
    auto it = cache.find(key);
    if (it == cache.end()) {
      FP_ASSIGN_OR_RETURN(Reading r, checker.Read(device));
      it = cache.emplace(key, std::move(r)).first;
    }
    ++rep.checked;
    Status verdict = Judge(it->second, s.acks, expect, checker.fail_closed_ok());
    if (verdict.ok()) {
      rep.fail_closed += it->second.fail_closed ? 1 : 0;
      continue;
    }
    ++rep.unacceptable;
    if (rep.reported.size() < options.max_reported) rep.reported.push_back({s, verdict.message()});
  }
  rep.distinct = cache.size();
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

}  // namespace flashpipe::powercut
