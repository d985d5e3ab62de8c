// The two things `flashpipe bench` runs on a BenchTarget, as library code so
// that the command only parses flags and prints:
//   RunTransferSuite  every direction x mode x request size (mmc_test 37-40
//                     generalised); for each size the modes run back to back
//                     (interleaved, so a shared machine's changing load hits
//                     them alike), mmc_test lines printed per direction;
//   RunSparseStudy    the bounce-buffer variants, then the pipelined engine.
// With repeat > 1 each measurement is run that many times and the median kept.
// Progress and result lines go to `out`.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/bench_target.h"
#include "bench/bounce_study.h"
#include "bench/report.h"
#include "bench/transfer.h"

namespace flashpipe::bench {

inline constexpr const char* kDefaultSizes = "4k,8k,16k,32k,64k,128k,256k,512k,1M,4M";

struct SuiteOptions {
  std::vector<uint64_t> sizes;
  uint64_t total = uint64_t{128} << 20;  // per size; capped by the area
  std::vector<Mode> modes = {Mode::kBlocking, Mode::kNonBlocking, Mode::kQueued};
  std::vector<Direction> directions = {Direction::kWrite, Direction::kRead};
  unsigned queue_depth = 4;
  Prep prep;
  bool buffered = false;
  unsigned repeat = 1;
  const CancelFlag* cancel = nullptr;  // stops the run between requests
};

struct SuiteReport {
  Area area;
  RunInfo info;
  std::vector<TransferResult> results;
};

// The area the suite will use on `t` (print it before running).
Result<Area> SuiteArea(const BenchTarget& t, const SuiteOptions& o);
Result<SuiteReport> RunTransferSuite(BenchTarget& t, const SuiteOptions& o, const Area& area, FILE* out);

struct StudyOptions {
  std::string image;
  std::vector<StudyVariant> variants;  // bounce variants; pipelined is added
  unsigned queue_depth = 4;            // of the pipelined engine
  uint64_t request_size = 0;           // of the pipelined engine; 0 = from the device
  unsigned repeat = 1;
  const CancelFlag* cancel = nullptr;  // stops the run between events
};

Result<Area> StudyArea(const BenchTarget& t, const ImageSummary& image);
// Results in the order run (variants, then pipelined).
Result<std::vector<StudyResult>> RunSparseStudy(BenchTarget& t, const ImageSummary& image,
                                                const StudyOptions& o, const Area& area, FILE* out);

}  // namespace flashpipe::bench
