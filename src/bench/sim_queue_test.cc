#include "bench/sim_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "bench/transfer.h"

namespace flashpipe::bench {
namespace {

SimSpec Emmc() {
  auto spec = ParseSimSpec("sim:size=8G,bw=45M,cmd_us=300");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

TEST(SimSpecTest, ParsesSizesBinaryAndRatesSi) {
  SimSpec s = Emmc();
  EXPECT_EQ(s.size, uint64_t{8} << 30);
  EXPECT_EQ(s.bw, 45'000'000u);
  EXPECT_EQ(s.cmd_ns, 300'000u);
  EXPECT_EQ(s.lbs, 512u);
  EXPECT_EQ(s.time, SimTime::kVirtual);
  auto t = ParseSimSpec("sim:size=64M,bw=1G,cmd_us=0,lbs=4096,zero_bw=2G,time=real");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->size, uint64_t{64} << 20);
  EXPECT_EQ(t->bw, 1'000'000'000u);
  EXPECT_EQ(t->lbs, 4096u);
  EXPECT_EQ(t->zero_bw, 2'000'000'000u);
  EXPECT_EQ(t->time, SimTime::kReal);
  EXPECT_EQ(FormatSimSpec(*t), "sim:size=67108864,bw=1000000000,cmd_us=0,lbs=4096,zero_bw=2000000000,time=real");
}

TEST(SimSpecTest, RejectsBadText) {
  EXPECT_EQ(ParseSimSpec("sim:size=8G,speed=4").status().message(),
            "sim:size=8G,speed=4: unknown key 'speed' (size, bw, cmd_us, lbs, zero_bw, time)");
  EXPECT_FALSE(ParseSimSpec("sim:bw=0").ok());
  EXPECT_FALSE(ParseSimSpec("sim:lbs=1000").ok());
  EXPECT_FALSE(ParseSimSpec("sim:size").ok());
  EXPECT_FALSE(ParseSimSpec("/dev/sda").ok());
}

TEST(SimQueueTest, ServiceTimeIsCommandPlusBytesOverBandwidth) {
  SimSpec s = Emmc();
  // 1 MiB at 45 MB/s = 23301689.something ns, rounded up.
  EXPECT_EQ(SimServiceNs(s, io::OpKind::kWrite, 1 << 20), 300'000u + 23'301'689u);
  EXPECT_EQ(SimServiceNs(s, io::OpKind::kRead, 45'000'000), 300'000u + 1'000'000'000u);
  EXPECT_EQ(SimServiceNs(s, io::OpKind::kDiscard, 1 << 30), 300'000u);
}

TEST(SimQueueTest, ServesOneRequestAtATimeInVirtualTime) {
  SimSpec s = Emmc();
  ManualClock clock;
  SimQueue q(s, &clock, 4);
  EXPECT_FALSE(q.Submit({io::OpKind::kWrite, 0, 45'000, nullptr, -1, 0}).ok());  // not 512-aligned
  EXPECT_EQ(q.in_flight(), 0u);
  const uint64_t len = 45'056;  // 88 sectors
  const uint64_t svc2 = SimServiceNs(s, io::OpKind::kWrite, len);
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(q.Submit({io::OpKind::kWrite, i * len, len, nullptr, -1, i}).ok());
  }
  for (uint64_t i = 0; i < 3; ++i) {
    auto c = q.Wait();
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->tag, i);
    EXPECT_EQ(clock.Now(), (i + 1) * svc2);
  }
  EXPECT_EQ(q.stats().requests, 3u);
  EXPECT_EQ(q.stats().busy_ns, 3 * svc2);
}

TEST(SimQueueTest, RequestWaitsForHostAndForDevice) {
  SimSpec s = Emmc();
  ManualClock clock;
  SimQueue q(s, &clock, 2);
  const uint64_t svc = SimServiceNs(s, io::OpKind::kWrite, 4096);
  clock.Spend(1000);
  ASSERT_TRUE(q.Submit({io::OpKind::kWrite, 0, 4096, nullptr, -1, 7}).ok());
  clock.Spend(10);  // host does a little, submits the next: it queues behind
  ASSERT_TRUE(q.Submit({io::OpKind::kWrite, 4096, 4096, nullptr, -1, 8}).ok());
  EXPECT_FALSE(q.Submit({io::OpKind::kWrite, 8192, 4096, nullptr, -1, 9}).ok());  // depth 2
  ASSERT_TRUE(q.Wait().ok());
  EXPECT_EQ(clock.Now(), 1000 + svc);
  clock.Spend(5 * svc);  // host is slower than the device now
  ASSERT_TRUE(q.Wait().ok());
  EXPECT_EQ(clock.Now(), 1000 + 6 * svc);  // the second one finished long ago
}

TEST(SimQueueTest, RefusesOpsBeyondTheEnd) {
  SimSpec s = *ParseSimSpec("sim:size=1M");
  ManualClock clock;
  SimQueue q(s, &clock, 1);
  Status st = q.Submit({io::OpKind::kWrite, 1 << 20, 512, nullptr, -1, 0});
  EXPECT_EQ(st.code(), Code::kNoSpace);
  EXPECT_EQ(st.message(), "sim: write at offset 1048576 length 512 beyond the device end 1048576");
  EXPECT_TRUE(q.Submit({io::OpKind::kWrite, (1 << 20) - 512, 512, nullptr, -1, 0}).ok());
}

// The model in docs/bench.md, checked exactly in virtual time: n requests of
// service s with host work p take n*(p+s) blocking and p+s+(n-1)*max(p,s)
// with any depth >= 2, for writes and reads, host faster or slower than the
// device.
struct ModelCase {
  uint64_t request;
  uint64_t spin_us;
};

class SimModelTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(SimModelTest, TransferTimeMatchesModelExactly) {
  const SimSpec s = Emmc();
  const ModelCase mc = GetParam();
  const uint64_t n = 37;
  const uint64_t p = mc.spin_us * 1000;
  const uint64_t svc = SimServiceNs(s, io::OpKind::kWrite, mc.request);
  for (Direction d : {Direction::kWrite, Direction::kRead}) {
    for (Mode m : {Mode::kBlocking, Mode::kNonBlocking, Mode::kQueued}) {
      ManualClock clock;
      const unsigned depth = ModeDepth(m, 4);
      SimQueue q(s, &clock, depth);
      TransferSpec spec;
      spec.direction = d;
      spec.mode = m;
      spec.depth = depth;
      spec.request = mc.request;
      spec.count = n;
      spec.offset = uint64_t{2} << 30;
      spec.prep = Prep{Prep::kSpin, p};
      auto r = RunTransfer(q, clock, spec);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const uint64_t want = m == Mode::kBlocking ? n * (p + svc) : p + svc + (n - 1) * std::max(p, svc);
      EXPECT_EQ(r->ns, want) << DirectionName(d) << " " << ModeName(m);
      EXPECT_EQ(q.stats().requests, n);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HostSlowerAndFaster, SimModelTest,
                         ::testing::Values(ModelCase{4096, 100}, ModelCase{4096, 5000},
                                           ModelCase{1 << 20, 2000}, ModelCase{512 << 10, 0}));

// A RealClock that logs host work (P) and waits for the device (W) in the
// order they happen, and counts any that returned early. How late they
// return depends on the machine's load, so no test asserts it:
// bench/sim_time_bench.sh measures real time against the model.
class LoggingRealClock : public Clock {
 public:
  uint64_t Now() override { return real_.Now(); }
  void SleepUntil(uint64_t t) override {
    real_.SleepUntil(t);
    early += real_.Now() < t;
    log += 'W';
  }
  void Spend(uint64_t ns) override {
    const uint64_t start = real_.Now();
    real_.Spend(ns);
    early += real_.Now() - start < ns;
    log += 'P';
  }
  std::string log;
  int early = 0;

 private:
  RealClock real_;
};

std::string Repeat(std::string_view s, uint64_t n) {
  std::string out;
  for (uint64_t i = 0; i < n; ++i) out += s;
  return out;
}

// In real time (the sim sleeps until each completion, the host really
// spins), what holds whatever the load: no sleep or spin ends early, so no
// run beats the model; and non-blocking prepares request k+1 before it waits
// for k (host work overlaps device time), blocking never does.
TEST(SimRealTimeTest, NonBlockingOverlapsHostWorkAndNoRunBeatsTheModel) {
  const SimSpec s = *ParseSimSpec("sim:size=1G,bw=1G,cmd_us=2000,time=real");
  const uint64_t n = 10, p = 1'000'000, request = 4096;
  const uint64_t svc = SimServiceNs(s, io::OpKind::kWrite, request);
  const std::string want_log[] = {
      "P" + Repeat("WP", n - 1) + "W",         // blocking: wait, then prepare the next
      "PP" + Repeat("WP", n - 2) + "WW",       // non-blocking: one prepared ahead
  };
  for (Mode m : {Mode::kBlocking, Mode::kNonBlocking}) {
    SCOPED_TRACE(ModeName(m));
    LoggingRealClock clock;
    const unsigned depth = ModeDepth(m, 4);
    SimQueue q(s, &clock, depth);
    TransferSpec spec{Direction::kWrite, m, depth, request, n, 0, 4096, Prep{Prep::kSpin, p}};
    auto r = RunTransfer(q, clock, spec);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(clock.early, 0);
    EXPECT_EQ(clock.log, want_log[m == Mode::kBlocking ? 0 : 1]);
    const uint64_t model = m == Mode::kBlocking ? n * (p + svc) : p + svc + (n - 1) * std::max(p, svc);
    EXPECT_GE(r->ns, model);
    EXPECT_EQ(q.stats().busy_ns, n * svc);
  }
}

}  // namespace
}  // namespace flashpipe::bench
