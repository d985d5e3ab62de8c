#include "powercut/harness.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <map>

#include "base/fd_io.h"
#include "base/sha256.h"
#include "base/unique_fd.h"

namespace flashpipe::powercut {

Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("open {}", path));
  if (!S_ISREG(st.st_mode)) return InvalidArgument(fmt::format("{} is not a regular file", path));
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  FP_RETURN_IF_ERROR(PreadExact(fd.get(), bytes, 0, path));
  return bytes;
}

Result<Reading> Checker::ReadSnapshot(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(path));
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

namespace {

// One checker's side of a run: its report and its cache of readings.
struct CaseRun {
  HarnessCase* c;
  HarnessReport rep;
  std::map<Sha256::Digest, Reading> cache;

  Status Check(const CrashState& s, std::span<const uint8_t> device, size_t max_reported) {
    auto [roff, rlen] = c->checker->region();
    Sha256 h;
    h.Update(rlen == 0 ? device : device.subspan(roff, rlen));
    auto key = h.Final();
    auto it = cache.find(key);
    if (it == cache.end()) {
      FP_ASSIGN_OR_RETURN(Reading r, c->checker->Read(device));
      it = cache.emplace(key, std::move(r)).first;
    }
    ++rep.checked;
    Status verdict = Judge(it->second, s.acks, c->expectations, c->checker->fail_closed_ok());
    if (verdict.ok()) {
      rep.fail_closed += it->second.fail_closed ? 1 : 0;
      return Status::Ok();
    }
    ++rep.unacceptable;
    if (rep.reported.size() < max_reported) rep.reported.push_back({s, verdict.message()});
    return Status::Ok();
  }
};

Status CheckCase(const HarnessCase& c, const WriteLog& log, uint64_t device_size) {
  if (c.expectations.size() != log.marks() + 1) {
    return InvalidArgument(fmt::format("{}: the log holds {} marks, so {} expectations are needed, not {}",
                                       c.checker->name(), log.marks(), log.marks() + 1, c.expectations.size()));
  }
  auto [roff, rlen] = c.checker->region();
  if (roff > device_size || rlen > device_size - roff) {
    return InvalidArgument(fmt::format("{}: its {} bytes at byte {} lie outside the device of {} bytes",
                                       c.checker->name(), rlen, roff, device_size));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<HarnessReport>> RunHarness(const WriteLog& log, std::vector<uint8_t> initial,
                                              std::span<HarnessCase> cases, const HarnessOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (const auto& c : cases) FP_RETURN_IF_ERROR(CheckCase(c, log, initial.size()));
  Enumeration en = EnumerateCrashStates(log, options.budget);
  std::vector<CaseRun> runs;
  for (auto& c : cases) {
    CaseRun r{&c, {}, {}};
    r.rep.name = std::string(c.checker->name());
    r.rep.writes = log.writes();
    r.rep.flushes = log.flushes();
    r.rep.marks = log.marks();
    for (const auto& e : log.entries()) r.rep.fua += e.changes_medium() && e.is_fua() ? 1 : 0;
    r.rep.windows = en.windows;
    r.rep.largest_window = en.largest_window;
    r.rep.generated = en.generated;
    r.rep.planned = en.states.size();
    runs.push_back(std::move(r));
  }
  DeviceReplay replay(log, std::move(initial));
  bool out_of_time = false;
  for (const CrashState& s : en.states) {
    if (elapsed() > options.max_seconds) {
      out_of_time = true;
      break;
    }
    std::span<const uint8_t> device = replay.Build(s);
    for (auto& r : runs) FP_RETURN_IF_ERROR(r.Check(s, device, options.max_reported));
  }
  std::vector<HarnessReport> out;
  for (auto& r : runs) {
    r.rep.distinct = r.cache.size();
    r.rep.out_of_time = out_of_time;
    r.rep.seconds = elapsed();
    out.push_back(std::move(r.rep));
  }
  return out;
}

Result<HarnessReport> RunHarness(const WriteLog& log, std::vector<uint8_t> initial, Checker& checker,
                                 std::span<const Expectation> expectations, const HarnessOptions& options) {
  HarnessCase c{&checker, {expectations.begin(), expectations.end()}};
  FP_ASSIGN_OR_RETURN(std::vector<HarnessReport> reps, RunHarness(log, std::move(initial), std::span(&c, 1), options));
  return std::move(reps[0]);
}

}  // namespace flashpipe::powercut
