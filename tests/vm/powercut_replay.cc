// powercut_replay: the power-cut harness's replayer (docs/design.md, "Power
// cuts"). Reads a dm-log-writes log of one run and the device it started
// from, rebuilds the device at every flush and mark and at sampled
// reorderings of the writes in between (powercut/crash_states.h), and has
// the case's checker judge each state against the run's snapshots (one per
// mark, after the initial one). Prints a summary line, then one
// "UNACCEPTABLE" line per bad state (write index, flush index, reason).
// Exit 0: every state checked was acceptable; 1: some were not; 2: usage or
// the harness itself failed. The files case judges several outputs of one
// ext4 image in one pass (each state's image checked once).
//
//   powercut_replay boot-control --device disk.img --log misc.log --offset 1048576
//       --expect disk.img --expect snap.1 --expect snap.2
#include <CLI/CLI.hpp>

#include <cstdio>
#include "powercut/device_checkers.h"
#include "powercut/ext4_checkers.h"
#include "powercut/harness.h"

namespace fp = flashpipe;
namespace pc = flashpipe::powercut;

namespace {

struct Flags {
  std::string which, device, log;
  std::vector<std::string> expect, paths, parts;
  uint64_t offset = 0, size = 0;
  uint32_t slot = 0;
  double max_seconds = 120;
  pc::Budget budget;
};

using Checkers = std::vector<std::unique_ptr<pc::Checker>>;

template <typename C>
fp::Status Add(fp::Result<std::unique_ptr<C>> c, Checkers* out) {
  if (!c.ok()) return c.status();
  out->push_back(std::move(*c));
  return fp::Status::Ok();
}

fp::Status OnePath(const Flags& f) {
  if (f.paths.size() == 1 && f.parts.empty()) return fp::Status::Ok();
  return fp::InvalidArgument(fmt::format("{} takes one --path", f.which));
}

// One row per case: a new case (the GPT's, say) is a Checker and a row here.
using Make = fp::Status (*)(const Flags&, uint64_t region_size, Checkers* out);
struct CaseRow {
  const char* name;
  Make make;
};
const CaseRow kCases[] = {
    {"boot-control", [](const Flags& f, uint64_t, Checkers* out) {
       out->emplace_back(new pc::BootControlChecker(f.offset));
       return fp::Status::Ok();
     }},
    {"lp-metadata", [](const Flags& f, uint64_t size, Checkers* out) {
       out->emplace_back(new pc::LpMetadataChecker(f.offset, size, f.slot));
       return fp::Status::Ok();
     }},
    {"gpt", [](const Flags&, uint64_t, Checkers* out) {
       out->emplace_back(new pc::GptChecker());
       return fp::Status::Ok();
     }},
    {"region", [](const Flags& f, uint64_t size, Checkers* out) {
       out->emplace_back(new pc::RegionChecker(f.offset, size));
       return fp::Status::Ok();
     }},
    {"state-file", [](const Flags& f, uint64_t, Checkers* out) {
       FP_RETURN_IF_ERROR(OnePath(f));
       return Add(pc::StateFileChecker::Create(f.paths[0]), out);
     }},
    // Every --path (a file) and --parts (resparse's set) of one ext4 image,
    // each judged on its own; the snapshots are copies of their directory.
    {"files", [](const Flags& f, uint64_t, Checkers* out) {
       auto fs = pc::Ext4Scratch::Create();
       if (!fs.ok()) return fs.status();
       for (const auto& p : f.paths) FP_RETURN_IF_ERROR(Add(pc::FileChecker::Create(p, *fs), out));
       for (const auto& p : f.parts) FP_RETURN_IF_ERROR(Add(pc::PartSetChecker::Create(p, *fs), out));
       if (out->empty()) return fp::InvalidArgument("files needs --path or --parts");
       return fp::Status::Ok();
     }},
};

fp::Result<Checkers> MakeCheckers(const Flags& f, uint64_t device_size) {
  if (f.offset > device_size || f.size > device_size - f.offset) {
    return fp::InvalidArgument(fmt::format("--offset {} --size {} lie outside the device of {} bytes", f.offset, f.size,
                                           device_size));
  }
  const uint64_t size = f.size != 0 ? f.size : device_size - f.offset;
  for (const CaseRow& row : kCases) {
    if (f.which != row.name) continue;
    Checkers out;
    FP_RETURN_IF_ERROR(row.make(f, size, &out));
    return out;
  }
  return fp::InvalidArgument(fmt::format("unknown case '{}'", f.which));
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
      if (!r.ok()) return r.status().WithContext(fmt::format("{}: expectation {}", c.name(), i));
      e.reading = std::move(*r);
    }
    std::printf("%s: expect %zu (%s): %s\n", std::string(c.name()).c_str(), i, e.label.c_str(),
                e.any ? "anything" : e.reading.text.c_str());
    out.push_back(std::move(e));
  }
  return out;
}

void Print(const pc::HarnessReport& rep) {
  std::printf("%s\n", rep.Summary().c_str());
  for (const auto& u : rep.reported) {
    std::printf("UNACCEPTABLE %s: write %llu, flush %llu: %s: %s\n", rep.name.c_str(),
                static_cast<unsigned long long>(u.state.write_index),
                static_cast<unsigned long long>(u.state.flush_index), u.state.Describe().c_str(), u.reason.c_str());
  }
  if (rep.unacceptable > rep.reported.size()) {
    std::printf("UNACCEPTABLE %s: ... and %llu more\n", rep.name.c_str(),
                static_cast<unsigned long long>(rep.unacceptable - rep.reported.size()));
  }
}

int Run(const Flags& f) {
  auto fail = [](const fp::Status& s) {
    std::fprintf(stderr, "powercut_replay: %s\n", s.ToString().c_str());
    return 2;
  };
  auto initial = pc::ReadWholeFile(f.device);
  if (!initial.ok()) return fail(initial.status());
  auto log = pc::WriteLog::ReadFile(f.log, initial->size());
  if (!log.ok()) return fail(log.status());
  auto checkers = MakeCheckers(f, initial->size());
  if (!checkers.ok()) return fail(checkers.status());
  std::vector<pc::HarnessCase> cases;
  for (auto& c : *checkers) {
    auto expect = Expectations(f, *log, *c);
    if (!expect.ok()) return fail(expect.status());
    cases.push_back({c.get(), std::move(*expect)});
  }
  pc::HarnessOptions o;
  o.budget = f.budget;
  o.max_seconds = f.max_seconds;
  auto reps = pc::RunHarness(*log, std::move(*initial), cases, o);
  if (!reps.ok()) return fail(reps.status());
  bool bad = false;
  for (const auto& rep : *reps) {
    Print(rep);
    bad = bad || rep.unacceptable > 0;
  }
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"Replays a dm-log-writes log at every power-cut state and judges each"};
  app.add_option("case", f.which, "boot-control, lp-metadata, gpt, region, state-file or files")->required();
  app.add_option("--device", f.device, "the device's content before the run")->required();
  app.add_option("--log", f.log, "the dm-log-writes log device's content")->required();
  app.add_option("--expect", f.expect, "snapshot before the run, then one per mark ('any', 'absent')")->required();
  app.add_option("--offset", f.offset, "misc partition, super or region: byte offset on the device");
  app.add_option("--size", f.size, "super or region size in bytes (default: to the end)");
  app.add_option("--slot", f.slot, "lp-metadata: the metadata slot the daemon opens");
  app.add_option("--path", f.paths, "state-file, files: a file inside the ext4 image");
  app.add_option("--parts", f.parts, "files: resparse's PREFIX (PREFIX.0, PREFIX.1, ...) inside the ext4 image");
  app.add_option("--max-states", f.budget.max_states, "states checked at most");
  app.add_option("--max-seconds", f.max_seconds, "time for the checks at most");
  app.add_option("--seed", f.budget.seed, "seed of the sampled subsets and tears");
  app.add_option("--all-subsets-up-to", f.budget.all_subsets_up_to, "windows this small get every subset");
  app.add_option("--random-subsets", f.budget.random_subsets, "random subsets per sampling point of a large window");
  app.add_option("--tears", f.budget.tears, "torn writes per window");
  app.add_option("--tear-unit", f.budget.tear_unit, "bytes the device writes whole (default: the log's sector)");
  CLI11_PARSE(app, argc, argv);
  return Run(f);
}
