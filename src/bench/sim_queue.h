// SimQueue: a simulated storage device behind the IoQueue interface, for
// showing and testing what request size and pipelining do where the real
// device is too fast (a loop device mostly measures memcpy) or absent.
//
// The model (docs/bench.md has the derivations):
//   - The device serves one request at a time, in submission order, like an
//     eMMC without command queueing. The queue accepts up to depth() requests;
//     the ones behind the first simply wait for the device.
//   - A request of B bytes keeps the device busy for
//         service(B) = cmd_ns + ceil(B * 1e9 / bw)        (writes and reads)
//     zero-out ranges cost cmd_ns + B / zero_bw (zero_bw defaults to bw: the
//     device writes the zeros), discard and punch-hole cost cmd_ns.
//   - A request submitted at host time t starts at max(t, end of the previous
//     request) and completes at start + service. Wait() returns the oldest
//     request once the clock reaches its completion time (Clock::SleepUntil:
//     a jump on a SkipClock/ManualClock, a real sleep on a RealClock).
//   - Sync() costs nothing. No data is stored: reads leave the buffer as it
//     was, so a sim:size=8G target costs no memory.
// Consequence for a host that spends p ns preparing each of n requests of
// service time s: blocking (depth 1) takes n*(p+s); with depth >= 2 the host
// prepares request k+1 while the device serves k, so p + s + (n-1)*max(p,s).
//
// Target text: "sim:size=8G,bw=45M,cmd_us=300[,lbs=512][,zero_bw=R][,time=virtual|real]"
// (sizes binary via ParseSize, rates SI via ParseRate).
// Thread-compatible, like every IoQueue. The clock must outlive the queue.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bench/clock.h"
#include "io/io_queue.h"
#include "io/target.h"

namespace flashpipe::bench {

enum class SimTime { kVirtual, kReal };

struct SimSpec {
  uint64_t size = uint64_t{8} << 30;
  uint64_t bw = 45'000'000;       // bytes per second
  uint64_t cmd_ns = 300'000;      // per-request overhead
  uint32_t lbs = 512;             // logical block size
  uint64_t zero_bw = 0;           // bytes per second for kZeroOut; 0 = bw
  SimTime time = SimTime::kVirtual;
};

bool IsSimTarget(std::string_view target);  // starts with "sim:"
Result<SimSpec> ParseSimSpec(std::string_view target);
std::string FormatSimSpec(const SimSpec& spec);  // canonical "sim:..." text
io::Geometry SimGeometry(const SimSpec& spec);
// Device time of one request, per the model above.
uint64_t SimServiceNs(const SimSpec& spec, io::OpKind kind, uint64_t bytes);

struct SimStats {
  uint64_t requests = 0;
  uint64_t bytes = 0;    // data moved by writes and reads
  uint64_t busy_ns = 0;  // sum of service times
};

class SimQueue : public io::IoQueue {
 public:
  SimQueue(const SimSpec& spec, Clock* clock, unsigned depth);

  std::string_view name() const override { return "sim"; }
  unsigned depth() const override { return depth_; }
  unsigned in_flight() const override { return static_cast<unsigned>(pending_.size()); }
  Status Submit(const io::IoOp& op) override;
  Result<io::IoCompletion> Wait() override;
  Status Sync() override { return Status::Ok(); }

  const SimStats& stats() const { return stats_; }

 private:
  struct Pending {
    uint64_t tag;
    uint64_t done_ns;
  };
  Status Check(const io::IoOp& op) const;

  SimSpec spec_;
  Clock* clock_;
  unsigned depth_;
  uint64_t busy_until_ = 0;
  std::deque<Pending> pending_;
  SimStats stats_;
};

}  // namespace flashpipe::bench
