// powercut_replay: the power-cut harness's replayer (docs/design.md, "Power
// cuts"). Reads a dm-log-writes log of one run and the device it started
// from, rebuilds the device at every flush and mark and at sampled
// reorderings of the writes in between (powercut/crash_states.h), and has
// the case's checker judge each state against the run's snapshots (one per
// mark, after the initial one). Prints a summary line, then one
// "UNACCEPTABLE" line per bad state (write index, flush index, reason).
// Exit 0: every state checked was acceptable; 1: some were not; 2: usage or
// the harness itself failed.
//
//   powercut_replay boot-control --device disk.img --log misc.log --offset 1048576
//       --expect disk.img --expect snap.1 --expect snap.2
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>

#include "base/fd_io.h"
#include "base/unique_fd.h"
#include "powercut/device_checkers.h"
#include "powercut/ext4_checkers.h"
#include "powercut/harness.h"

namespace fp = flashpipe;
namespace pc = flashpipe::powercut;

namespace {

struct Flags {
  std::string which, device, log, path;
  std::vector<std::string> expect;
  uint64_t offset = 0, size = 0;
  uint32_t slot = 0;
  double max_seconds = 120;
  pc::Budget budget;
};

template <typename C>
fp::Result<std::unique_ptr<pc::Checker>> Upcast(fp::Result<std::unique_ptr<C>> c) {
  if (!c.ok()) return c.status();
  return std::unique_ptr<pc::Checker>(std::move(*c));
}

// One row per case: a new case (the GPT's, say) is a Checker and a row here.
using Make = fp::Result<std::unique_ptr<pc::Checker>> (*)(const Flags&, uint64_t region_size);
struct CaseRow {
  const char* name;
  Make make;
};
const CaseRow kCases[] = {
    {"boot-control", [](const Flags& f, uint64_t) -> fp::Result<std::unique_ptr<pc::Checker>> {
       return std::unique_ptr<pc::Checker>(new pc::BootControlChecker(f.offset));
     }},
    {"lp-metadata", [](const Flags& f, uint64_t size) -> fp::Result<std::unique_ptr<pc::Checker>> {
       return std::unique_ptr<pc::Checker>(new pc::LpMetadataChecker(f.offset, size, f.slot));
     }},
    {"region", [](const Flags& f, uint64_t size) -> fp::Result<std::unique_ptr<pc::Checker>> {
       return std::unique_ptr<pc::Checker>(new pc::RegionChecker(f.offset, size));
     }},
    {"state-file", [](const Flags& f, uint64_t) { return Upcast(pc::StateFileChecker::Create(f.path)); }},
    {"file", [](const Flags& f, uint64_t) { return Upcast(pc::FileChecker::Create(f.path)); }},
    {"part-set", [](const Flags& f, uint64_t) { return Upcast(pc::PartSetChecker::Create(f.path)); }},
};

fp::Result<std::unique_ptr<pc::Checker>> MakeChecker(const Flags& f, uint64_t device_size) {
  if (f.offset > device_size || f.size > device_size - f.offset) {
    return fp::InvalidArgument(fmt::format("--offset {} --size {} lie outside the device of {} bytes", f.offset, f.size,
                                           device_size));
  }
  const uint64_t size = f.size != 0 ? f.size : device_size - f.offset;
  for (const CaseRow& row : kCases) {
    if (f.which == row.name) return row.make(f, size);
  }
  return fp::InvalidArgument(fmt::format("unknown case '{}'", f.which));
}

fp::Result<std::vector<uint8_t>> Slurp(const std::string& path) {
  fp::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return fp::ErrnoError(fmt::format("open {}", path));
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  FP_RETURN_IF_ERROR(fp::PreadExact(fd.get(), bytes, 0, path));
  return bytes;
}

fp::Result<std::vector<pc::Expectation>> Expectations(const Flags& f, const pc::WriteLog& log, pc::Checker& c) {
  std::vector<std::string> labels{"the run's start"};
  for (const auto& e : log.entries()) {
    if (e.is_mark()) labels.push_back(e.mark);
  }
  std::vector<pc::Expectation> out;
  for (size_t i = 0; i < f.expect.size(); ++i) {
    pc::Expectation e;
    e.label = i < labels.size() ? labels[i] : "?";
    e.any = f.expect[i] == "any";
    if (!e.any) {
      auto r = c.ReadSnapshot(f.expect[i]);
      if (!r.ok()) return r.status().WithContext(fmt::format("expectation {}", i));
      e.reading = std::move(*r);
    }
    std::printf("%s: expect %zu (%s): %s\n", std::string(c.name()).c_str(), i, e.label.c_str(),
                e.any ? "anything" : e.reading.text.c_str());
    out.push_back(std::move(e));
  }
  return out;
}

int Run(const Flags& f) {
  auto fail = [](const fp::Status& s) {
    std::fprintf(stderr, "powercut_replay: %s\n", s.ToString().c_str());
    return 2;
  };
  auto initial = Slurp(f.device);
  if (!initial.ok()) return fail(initial.status());
  auto log = pc::WriteLog::ReadFile(f.log, initial->size());
  if (!log.ok()) return fail(log.status());
  auto checker = MakeChecker(f, initial->size());
  if (!checker.ok()) return fail(checker.status());
  auto expect = Expectations(f, *log, **checker);
  if (!expect.ok()) return fail(expect.status());
  pc::HarnessOptions o;
  o.budget = f.budget;
  o.max_seconds = f.max_seconds;
  auto rep = pc::RunHarness(*log, std::move(*initial), **checker, *expect, o);
  if (!rep.ok()) return fail(rep.status());
  std::printf("%s\n", rep->Summary().c_str());
  for (const auto& u : rep->reported) {
    std::printf("UNACCEPTABLE %s: write %llu, flush %llu: %s: %s\n", rep->name.c_str(),
                static_cast<unsigned long long>(u.state.write_index),
                static_cast<unsigned long long>(u.state.flush_index), u.state.Describe().c_str(), u.reason.c_str());
  }
  if (rep->unacceptable > rep->reported.size()) {
    std::printf("UNACCEPTABLE %s: ... and %llu more\n", rep->name.c_str(),
                static_cast<unsigned long long>(rep->unacceptable - rep->reported.size()));
  }
  return rep->unacceptable == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"Replays a dm-log-writes log at every power-cut state and judges each"};
  app.add_option("case", f.which, "boot-control, lp-metadata, region, state-file, file or part-set")->required();
  app.add_option("--device", f.device, "the device's content before the run")->required();
  app.add_option("--log", f.log, "the dm-log-writes log device's content")->required();
  app.add_option("--expect", f.expect, "snapshot before the run, then one per mark ('any', 'absent')")->required();
  app.add_option("--offset", f.offset, "misc partition, super or region: byte offset on the device");
  app.add_option("--size", f.size, "super or region size in bytes (default: to the end)");
  app.add_option("--slot", f.slot, "lp-metadata: the metadata slot the daemon opens");
  app.add_option("--path", f.path, "file, state file or part prefix inside the ext4 image");
  app.add_option("--max-states", f.budget.max_states, "states checked at most");
  app.add_option("--max-seconds", f.max_seconds, "time for the checks at most");
  app.add_option("--seed", f.budget.seed, "seed of the sampled subsets and tears");
  app.add_option("--all-subsets-up-to", f.budget.all_subsets_up_to, "windows this small get every subset");
  app.add_option("--random-subsets", f.budget.random_subsets, "random subsets per sampling point of a large window");
  app.add_option("--tears", f.budget.tears, "torn writes per window");
  CLI11_PARSE(app, argc, argv);
  return Run(f);
}
