// engine_bench: how close ImageWriter comes to the device's sequential write
// ceiling. Writes N MiB of RAW-like events (slices of a random buffer, as the
// sparse decoder hands them over) to a target through the engine, and the same
// bytes with a plain O_DIRECT pwrite loop, alternating, several rounds; prints
// the median MiB/s of each, the ratio, CPU seconds per GiB and peak RSS.
//
//   engine_bench TARGET [--mib N] [--rounds R] [--request-size BYTES]
//                [--depth D] [--backend auto|io_uring|threads|sync] [--slice BYTES]
//                [--verify] [--fill]
// --fill writes one non-zero FILL instead (no copying: the bare pipeline).
// TARGET is overwritten from byte 0 (a loop device or a scratch file).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/fd_io.h"
#include "base/unique_fd.h"
#include "io/image_writer.h"
#include "io/target.h"

using namespace flashpipe;

namespace {

struct Args {
  std::string target;
  uint64_t mib = 1024;
  int rounds = 3;
  uint64_t request_size = 0;
  unsigned depth = 4;
  io::Backend backend = io::Backend::kAuto;
  uint64_t slice = 64 * 1024;
  bool verify = false;
  bool fill = false;  // one non-zero FILL: the pipeline without any copying
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Run {
  double mibps = 0, cpu_per_gib = 0;
  double mibps_nosync = 0;  // time spent in the final fdatasync left out, as fio does
};

// Forwards to the real queue and clocks Sync(), so the engine's data rate can
// be compared with fio's (which does not sync unless told to).
class SyncTimer final : public io::IoQueue {
 public:
  explicit SyncTimer(io::IoQueue* in) : in_(in) {}
  std::string_view name() const override { return in_->name(); }
  unsigned depth() const override { return in_->depth(); }
  unsigned in_flight() const override { return in_->in_flight(); }
  Status Submit(const io::IoOp& op) override { return in_->Submit(op); }
  Result<io::IoCompletion> Wait() override { return in_->Wait(); }
  bool RegisterBuffers(std::span<const std::span<uint8_t>> b) override { return in_->RegisterBuffers(b); }
  Status Sync() override {
    double t = Now();
    Status s = in_->Sync();
    sync_secs += Now() - t;
    return s;
  }
  double sync_secs = 0;

 private:
  io::IoQueue* in_;
};

Result<Run> RunEngine(const Args& a, const std::vector<uint8_t>& data) {
  io::TargetOptions to;
  to.force = true;
  FP_ASSIGN_OR_RETURN(auto target, io::Target::Open(a.target, to));
  FP_ASSIGN_OR_RETURN(auto queue, target->MakeQueue(a.backend, a.depth));
  io::WriterOptions wo;
  wo.request_size = a.request_size;
  wo.queue_depth = a.depth;
  wo.verify = a.verify;
  SyncTimer timed(queue.get());
  FP_ASSIGN_OR_RETURN(auto w, io::ImageWriter::Create({io::DeviceFor(*target, &timed)}, wo));
  uint64_t total = a.mib << 20;
  double t0 = Now(), c0 = CpuSeconds();
  if (a.fill) FP_RETURN_IF_ERROR(w->OnFill(0, total, 0x5A5A5A5A));
  for (uint64_t off = 0; off < total && !a.fill; off += a.slice) {
    uint64_t n = std::min(a.slice, total - off);
    FP_RETURN_IF_ERROR(w->OnRaw(off, {data.data() + off % data.size(), n}));
  }
  double t_finish = Now();
  FP_RETURN_IF_ERROR(w->Finish());
  double secs = Now() - t0;
  std::fprintf(stderr, "  engine: backend %s, %llu requests, Finish (drain+fdatasync%s) %.3f s, fdatasync %.3f s\n",
               std::string(queue->name()).c_str(), static_cast<unsigned long long>(w->stats().requests),
               a.verify ? "+verify" : "", Now() - t_finish, timed.sync_secs);
  return Run{a.mib / secs, (CpuSeconds() - c0) / (a.mib / 1024.0), a.mib / (secs - timed.sync_secs)};
}

Result<Run> RunPwrite(const Args& a, const std::vector<uint8_t>& data) {
  UniqueFd fd(open(a.target.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open " + a.target);
  const uint64_t bs = a.request_size ? a.request_size : 1 << 20;
  AlignedBuffer buf(bs);
  uint64_t total = a.mib << 20;
  double t0 = Now(), c0 = CpuSeconds();
  for (uint64_t off = 0; off < total; off += bs) {
    // The same copy the engine makes from the decoder's slice.
    std::memcpy(buf.data(), data.data() + off % data.size(), bs);
    FP_RETURN_IF_ERROR(PwriteAll(fd.get(), {buf.data(), bs}, off, a.target));
  }
  if (fdatasync(fd.get()) != 0) return ErrnoError("fdatasync " + a.target);
  double secs = Now() - t0;
  return Run{a.mib / secs, (CpuSeconds() - c0) / (a.mib / 1024.0)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--mib") a->mib = std::stoull(next());
    else if (s == "--rounds") a->rounds = std::stoi(next());
    else if (s == "--request-size") a->request_size = std::stoull(next());
    else if (s == "--depth") a->depth = static_cast<unsigned>(std::stoul(next()));
    else if (s == "--slice") a->slice = std::stoull(next());
    else if (s == "--verify") a->verify = true;
    else if (s == "--fill") a->fill = true;
    else if (s == "--backend") {
      auto b = io::ParseBackend(next());
      if (!b.ok()) return false;
      a->backend = *b;
    } else if (a->target.empty() && s[0] != '-') a->target = s;
    else return false;
  }
  return !a->target.empty();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, &a)) {
    std::fprintf(stderr, "usage: engine_bench TARGET [--mib N] [--rounds R] [--request-size B] [--depth D] "
                         "[--backend auto|io_uring|threads|sync] [--slice B] [--verify] [--fill]\n");
    return 2;
  }
  std::mt19937_64 rng(1);
  std::vector<uint8_t> data(8 << 20);  // small: peak RSS is then mostly the engine
  for (size_t i = 0; i < data.size(); i += 8) {
    uint64_t r = rng();
    std::memcpy(&data[i], &r, 8);
  }
  std::vector<double> engine, plain, engine_cpu, plain_cpu, engine_nosync;
  for (int r = 0; r < a.rounds; ++r) {
    auto e = RunEngine(a, data);
    if (!e.ok()) {
      std::fprintf(stderr, "engine: %s\n", e.status().ToString().c_str());
      return 1;
    }
    auto p = RunPwrite(a, data);
    if (!p.ok()) {
      std::fprintf(stderr, "pwrite: %s\n", p.status().ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "round %d: engine %.0f MiB/s, pwrite %.0f MiB/s\n", r + 1, e->mibps, p->mibps);
    engine.push_back(e->mibps);
    engine_nosync.push_back(e->mibps_nosync);
    plain.push_back(p->mibps);
    engine_cpu.push_back(e->cpu_per_gib);
    plain_cpu.push_back(p->cpu_per_gib);
  }
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::printf("target %s, %llu MiB x %d rounds, depth %u, slice %llu\n", a.target.c_str(),
              static_cast<unsigned long long>(a.mib), a.rounds, a.depth, static_cast<unsigned long long>(a.slice));
  std::printf("engine median %.0f MiB/s cpu %.2f s/GiB (ImageWriter.OnRaw, %llu-byte slices)\n", Median(engine),
              Median(engine_cpu), static_cast<unsigned long long>(a.slice));
  std::printf("engine-nosync median %.0f MiB/s (same runs, the final fdatasync's time left out)\n",
              Median(engine_nosync));
  std::printf("pwrite median %.0f MiB/s cpu %.2f s/GiB (plain O_DIRECT pwrite loop, depth 1)\n", Median(plain),
              Median(plain_cpu));
  std::printf("ratio engine/pwrite %.2f; peak RSS %ld MiB (incl. the 8 MiB source buffer)\n",
              Median(engine) / Median(plain), ru.ru_maxrss / 1024);
  return 0;
}
