// Many fake devices flashed at once: each gets the images whole, whatever
// its max-download-size; a slow one does not hold up the others; one that
// vanishes or refuses fails alone, and the report says what each did; a
// retried device is flashed again from the step it had not finished.
#include "host/fleet.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <functional>
#include <random>

#include "testing/fake_fastboot_device.h"
#include "testing/temp_dir.h"

namespace flashpipe::host {
namespace {

using namespace std::chrono_literals;
using testing::FakeDeviceConfig;
using testing::FakeFastbootDevice;

// The host's end of a cable to a fake device that outlives it.
class Link : public Transport {
 public:
  explicit Link(FakeFastbootDevice* d) : d_(d) {}
  Status Send(std::string_view c) override { return d_->Send(c); }
  Result<std::string> Receive() override { return d_->Receive(); }
  Status SendData(std::span<const std::span<const uint8_t>> p) override { return d_->SendData(p); }
  Status ReceiveData(std::span<uint8_t> b) override { return d_->ReceiveData(b); }
  std::string name() const override { return d_->name(); }

 private:
  FakeFastbootDevice* d_;
};

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  for (size_t i = n / 3; i < n / 2; ++i) v[i] = 0;  // a zero run
  return v;
}

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    boot_ = Random(300 << 10, 1);
    system_ = Random((6 << 20) + 4096 * 3, 2);
    testing::WriteFile(dir_ / "boot.img", boot_);
    testing::WriteFile(dir_ / "system.img", system_);
  }
  FakeFastbootDevice* Add(FakeDeviceConfig c) {
    devices_.push_back(std::make_unique<FakeFastbootDevice>(std::move(c)));
    auto* d = devices_.back().get();
    d->AddPartition("boot_a", 1 << 20);
    d->AddPartition("boot_b", 1 << 20);
    d->AddPartition("system", 8 << 20);
    return d;
  }
  std::vector<DeviceResult> Run(FleetOptions o, std::vector<std::string>* events = nullptr,
                                std::function<void(size_t, const std::string&)> on_line = {}) {
    std::vector<std::string> names;
    for (auto& d : devices_) names.push_back(d->name());
    std::mutex mu;
    Fleet f(names, {{"boot", {dir_ / "boot.img"}}, {"system", {dir_ / "system.img"}}},
            [this](size_t i) -> Result<std::unique_ptr<Transport>> {
              if (busy_) return Busy("claiming the interface: LIBUSB_ERROR_BUSY");
              if (refuse_connects_ > 0) {
                --refuse_connects_;
                return Cancelled("the device's port is closed");
              }
              if (devices_[i]->gone() && !revive_) return Cancelled("connection refused");
              if (devices_[i]->gone()) devices_[i]->Revive();
              return std::unique_ptr<Transport>(new Link(devices_[i].get()));
            },
            o, [&](size_t i, const std::string& line, bool) {
              std::lock_guard lock(mu);
              if (events) events->push_back(names[i] + ": " + line);
              if (on_line) on_line(i, line);
            });
    EXPECT_TRUE(f.Prepare().ok());
    return f.Run();
  }
  bool Flashed(FakeFastbootDevice* d, const std::string& slot = "a") {
    const auto& b = d->partitions.at("boot_" + slot);
    const auto& s = d->partitions.at("system");
    return std::equal(boot_.begin(), boot_.end(), b.begin()) && std::equal(system_.begin(), system_.end(), s.begin());
  }

  testing::TempDir dir_;
  std::vector<uint8_t> boot_, system_;
  std::vector<std::unique_ptr<FakeFastbootDevice>> devices_;
  bool revive_ = false;
  std::atomic<int> refuse_connects_{0};  // connection attempts refused before the device is there
  bool busy_ = false;                    // the device is there, held by another program
  size_t Downloads(FakeFastbootDevice* d) {
    return std::count_if(d->commands.begin(), d->commands.end(), [](const std::string& c) { return c.starts_with("download:"); });
  }
};

TEST_F(FleetTest, EveryDeviceGetsEveryImageForItsOwnLimit) {
  auto* a = Add({.serial = "a", .max_download = 1 << 20});
  auto* b = Add({.serial = "b", .max_download = 3 << 20, .current_slot = "b"});
  auto* c = Add({.serial = "c", .max_download = 64 << 20});
  FleetOptions o;
  o.feed.window_bytes = 2 << 20;
  o.feed.buffer_bytes = 256 << 10;
  auto results = Run(o);
  ASSERT_EQ(results.size(), 3u);
  for (auto& r : results) EXPECT_EQ(r.result, "ok") << r.device << ": " << r.error;
  EXPECT_TRUE(Flashed(a));
  EXPECT_TRUE(Flashed(b, "b"));
  EXPECT_TRUE(Flashed(c));
  EXPECT_EQ(results[0].steps[0].target, "boot_a");
  EXPECT_EQ(results[1].steps[0].target, "boot_b");
  EXPECT_EQ(results[0].serial, "a");
  EXPECT_EQ(results[0].steps[1].parts, 6u);  // 6 MiB of data (and a zero run) in parts of 1 MiB
  // Each part's download and flash command timed, as the AOSP client shows them.
  ASSERT_EQ(results[0].steps[1].part_times.size(), 6u);
  uint64_t timed = 0;
  for (const PartTiming& t : results[0].steps[1].part_times) {
    timed += t.bytes;
    EXPECT_GT(t.bytes, 0u);
    EXPECT_GE(t.send_seconds, 0);
    EXPECT_GE(t.write_seconds, 0);
  }
  EXPECT_EQ(timed, results[0].steps[1].bytes);
  EXPECT_NE(FleetJson(results, 1).find("\"part_times\": [{\"bytes\": "), std::string::npos);
  EXPECT_EQ(results[2].steps[1].parts, 1u);
  EXPECT_EQ(b->flashes["system"], 2);
  for (auto& r : results) EXPECT_FALSE(r.steps[1].read_alone);
}

// A device that takes stream-flash (flashpipe serve) hears the partition
// before each part's download; one that does not, only the AOSP commands.
TEST_F(FleetTest, EachPartIsAnnouncedToADeviceThatStreams) {
  auto* a = Add({.serial = "a", .stream = true});
  auto* b = Add({.serial = "b"});
  auto* c = Add({.serial = "c", .stream = true, .stream_refused = {"boot_a"}});
  FleetOptions o;
  auto results = Run(o);
  ASSERT_EQ(results.size(), 3u);
  for (auto& r : results) EXPECT_EQ(r.result, "ok") << r.device << ": " << r.error;
  EXPECT_TRUE(Flashed(a));
  EXPECT_TRUE(Flashed(b));
  EXPECT_TRUE(Flashed(c));  // boot_a refused to stream: sent as the AOSP client sends it
  EXPECT_EQ(std::count(c->commands.begin(), c->commands.end(), "stream-flash:boot_a"), 1);
  EXPECT_GT(std::count(c->commands.begin(), c->commands.end(), "stream-flash:system"), 0);
  std::vector<std::string> seen;
  for (size_t i = 0; i < a->commands.size(); ++i) {
    if (!a->commands[i].starts_with("download:")) continue;
    ASSERT_GT(i, 0u);
    seen.push_back(a->commands[i - 1]);
  }
  ASSERT_EQ(seen.size(), Downloads(a));
  EXPECT_EQ(seen.front(), "stream-flash:boot_a");
  EXPECT_EQ(seen.back(), "stream-flash:system");
  EXPECT_EQ(std::count(a->commands.begin(), a->commands.end(), "getvar:stream-flash"), 1);  // asked once
  EXPECT_EQ(std::count_if(b->commands.begin(), b->commands.end(),
                          [](const std::string& c) { return c.starts_with("stream-flash:"); }), 0);
}

TEST_F(FleetTest, ASlowDeviceDoesNotHoldUpTheOthersAndAFailingOneFailsAlone) {
  auto* fast = Add({.serial = "fast"});
  // The slow device stops taking data 2 MiB in until the fast one has
  // flashed system (at most 60 s): if the fast one waited for the slow one,
  // it would finish only after that wait, with the slow one far past 2 MiB.
  // An order, not a time, so a loaded machine cannot make it fail.
  std::mutex mu;
  std::condition_variable cv;
  bool fast_done = false;
  auto* slow = Add({.serial = "slow", .before_data = [&](uint64_t taken) {
                      if (taken < (2u << 20)) return;
                      std::unique_lock lock(mu);
                      cv.wait_for(lock, 60s, [&] { return fast_done; });
                    }});
  auto* vanishing = Add({.serial = "vanishing", .vanish_after = 2 << 20});
  FleetOptions o;
  o.feed.window_bytes = 1 << 20;
  o.feed.buffer_bytes = 128 << 10;
  o.feed.lag_limit = 200ms;
  o.feed.private_window_bytes = 512 << 10;
  // What the slow device had received when the fast one had flashed system.
  std::atomic<uint64_t> slow_bytes_when_fast_spoke{0};
  auto t0 = std::chrono::steady_clock::now();
  auto results = Run(o, nullptr, [&](size_t i, const std::string& line) {
    if (i != 0 || !line.starts_with("system done")) return;
    slow_bytes_when_fast_spoke = slow->data_bytes.load();
    std::lock_guard lock(mu);
    fast_done = true;
    cv.notify_all();
  });
  EXPECT_EQ(results[0].result, "ok") << results[0].error;
  EXPECT_EQ(results[1].result, "ok") << results[1].error;
  EXPECT_EQ(results[2].result, "gone");
  EXPECT_TRUE(Flashed(fast));
  EXPECT_TRUE(Flashed(slow));
  EXPECT_LT(slow_bytes_when_fast_spoke * 2, slow->data_bytes.load()) << "the fast device waited for the slow one";
  EXPECT_TRUE(results[1].steps[1].read_alone);
  // The vanished device: boot written, system partly.
  ASSERT_EQ(results[2].steps.size(), 2u);
  EXPECT_EQ(results[2].steps[0].result, "ok");
  EXPECT_EQ(results[2].steps[1].result, "failed");
  EXPECT_TRUE(results[2].steps[1].changed);
  EXPECT_EQ(results[2].error_class, "cancelled");
  std::string json = FleetJson(results, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_NE(json.find("\"device\": \"fake:vanishing\", \"serial\": \"vanishing\", \"result\": \"gone\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"written\": [\"boot_a\"], \"partly_written\": [\"system\"]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ok\": 2, \"failed\": 1"), std::string::npos);
  (void)vanishing;
}

TEST_F(FleetTest, ALockedDeviceIsReportedAsRefused) {
  auto* ok = Add({.serial = "ok"});
  auto* locked = Add({.serial = "locked", .locked = true});
  auto results = Run({});
  EXPECT_EQ(results[0].result, "ok");
  EXPECT_EQ(results[1].result, "refused");
  EXPECT_NE(results[1].error.find("remote: 'download: device is locked'"), std::string::npos) << results[1].error;
  EXPECT_EQ(results[1].attempts, 1);  // a refusal is not retried
  EXPECT_TRUE(Flashed(ok));
  EXPECT_EQ(locked->partitions.at("boot_a")[0], 0xDC);
  // A refused download changed nothing: the report must not send anyone to
  // check a partition the device never wrote (it said partly_written before).
  EXPECT_FALSE(results[1].steps[0].changed);
  std::string json = FleetJson(results, 1);
  EXPECT_NE(json.find("\"written\": [], \"partly_written\": []"), std::string::npos) << json;
}

TEST_F(FleetTest, RetryFlashesAgainFromTheFirstUnfinishedStep) {
  auto* d = Add({.serial = "flaky", .vanish_after = (300 << 10) + (1 << 20)});  // boot, then a part of system
  revive_ = true;
  FleetOptions o;
  o.retries = 1;
  o.retry_wait = 5s;
  auto results = Run(o);
  ASSERT_EQ(results[0].result, "ok") << results[0].error;
  EXPECT_EQ(results[0].attempts, 2);
  EXPECT_TRUE(Flashed(d));
  ASSERT_EQ(results[0].steps.size(), 3u);  // boot; system failed; system again
  EXPECT_EQ(results[0].steps[1].result, "failed");
  EXPECT_EQ(results[0].steps[2].partition, "system");
  EXPECT_EQ(results[0].steps[2].attempt, 2);
  EXPECT_EQ(d->flashes["boot_a"], 1);
}

TEST_F(FleetTest, LogicalPartitionsAreResizedToTheImageFirst) {
  auto* d = Add({.serial = "dyn", .logical = {"system"}});
  d->partitions["system"].resize(0);
  auto results = Run({});
  ASSERT_EQ(results[0].result, "ok") << results[0].error;
  EXPECT_EQ(d->partitions.at("system").size(), system_.size());
  EXPECT_TRUE(Flashed(d));
  auto it = std::find(d->commands.begin(), d->commands.end(),
                      fmt::format("resize-logical-partition:system:{}", system_.size()));
  EXPECT_NE(it, d->commands.end());
}

TEST_F(FleetTest, ADeviceNotThereYetIsWaitedForOnce) {
  auto* d = Add({.serial = "late"});
  refuse_connects_ = 3;  // a closed port three times, as U-Boot before its first reply
  std::vector<std::string> events;
  auto results = Run({}, &events);
  ASSERT_EQ(results[0].result, "ok") << results[0].error;
  EXPECT_TRUE(Flashed(d));
  EXPECT_EQ(std::count(events.begin(), events.end(), "fake:late: < waiting for fake:late >"), 1) << events.size();
  EXPECT_EQ(refuse_connects_.load(), 0);
}

TEST_F(FleetTest, ADeviceThatIsThereButHeldFailsAtOnce) {
  Add({.serial = "held"});
  busy_ = true;
  std::vector<std::string> events;
  auto t0 = std::chrono::steady_clock::now();
  auto results = Run({}, &events);  // no --wait: a wait would never end
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_NE(results[0].result, "ok");
  EXPECT_NE(results[0].error.find("LIBUSB_ERROR_BUSY"), std::string::npos) << results[0].error;
  for (const std::string& e : events) EXPECT_EQ(e.find("waiting for"), std::string::npos) << e;
}

TEST_F(FleetTest, TheWaitIsBounded) {
  Add({.serial = "never"});
  refuse_connects_ = 1 << 30;
  FleetOptions o;
  o.wait = 300ms;
  auto t0 = std::chrono::steady_clock::now();
  auto results = Run(o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(results[0].result, "absent");
  EXPECT_NE(results[0].error.find("not there after waiting 0.3 s (--wait)"), std::string::npos) << results[0].error;
  EXPECT_TRUE(results[0].steps.empty());
}

TEST_F(FleetTest, APartitionTheDeviceSaysItLacksIsRefusedBeforeAByteIsSent) {
  auto* d = Add({.serial = "nosys"});
  d->partitions.erase("system");
  auto results = Run({});
  ASSERT_EQ(results[0].steps.size(), 2u);
  EXPECT_EQ(results[0].steps[0].result, "ok");
  EXPECT_EQ(results[0].result, "refused");
  EXPECT_NE(results[0].error.find("the device has no partition 'system' (getvar partition-size:system: remote: "
                                  "'no such partition'); nothing sent"),
            std::string::npos)
      << results[0].error;
  EXPECT_EQ(results[0].steps[1].bytes, 0u);
  EXPECT_FALSE(results[0].steps[1].changed);
  EXPECT_EQ(Downloads(d), 1u);  // boot's only
  std::string json = FleetJson(results, 1);
  EXPECT_NE(json.find("\"written\": [\"boot_a\"], \"partly_written\": []"), std::string::npos) << json;
}

TEST_F(FleetTest, ADeviceThatCannotTellSendsAsBefore) {
  auto* d = Add({.serial = "mute", .partition_size = false});
  d->partitions.erase("system");
  FleetOptions o;
  auto results = Run(o);
  EXPECT_EQ(results[0].result, "refused");
  EXPECT_NE(results[0].error.find("remote: 'partition 'system' not found'"), std::string::npos) << results[0].error;
  EXPECT_GT(Downloads(d), 1u);  // system was sent, then refused by flash:
  // And with the check off, a device that could tell is sent to as well.
  devices_.clear();
  auto* e = Add({.serial = "told"});
  e->partitions.erase("system");
  o.check_partitions = false;
  results = Run(o);
  EXPECT_NE(results[0].error.find("remote: 'partition 'system' not found'"), std::string::npos) << results[0].error;
}

TEST_F(FleetTest, VerifyOnADeviceWithoutDigestWritesEveryPartitionAndSaysSo) {
  auto* d = Add({.serial = "nodigest"});  // answers oem digest with FAIL 'unknown command'
  FleetOptions o;
  o.verify = VerifyMode::kIfAble;
  auto results = Run(o);
  ASSERT_EQ(results[0].result, "ok") << results[0].error;
  EXPECT_TRUE(Flashed(d));
  ASSERT_EQ(results[0].steps.size(), 2u);
  for (const StepResult& s : results[0].steps) {
    EXPECT_TRUE(s.written);
    EXPECT_EQ(s.verify, "not_run");
    EXPECT_EQ(s.verify_method, "");
    EXPECT_EQ(s.verify_note,
              "written, not verified (device has no digest or read-back command: oem digest: remote: 'unknown "
              "command'; fetch: remote: 'unknown command')");
  }
  std::string json = FleetJson(results, 1);
  EXPECT_NE(json.find("\"written\": [\"boot_a\", \"system\"], \"partly_written\": [], \"not_verified\": "
                      "[\"boot_a\", \"system\"]"),
            std::string::npos)
      << json;

  o.verify = VerifyMode::kRequired;  // every partition flashed, then the device fails
  devices_.clear();
  auto* r = Add({.serial = "required"});
  results = Run(o);
  EXPECT_EQ(results[0].result, "unverified");
  EXPECT_TRUE(Flashed(r));
  EXPECT_NE(results[0].error.find("written but not verified (--verify=required): boot_a, system"), std::string::npos)
      << results[0].error;
}

TEST_F(FleetTest, VerifyReadsBackWhereTheDeviceHasFetchAndNoDigest) {
  auto* d = Add({.serial = "fetcher", .fetch = true, .max_fetch = 1 << 20});
  auto* g = Add({.serial = "digester", .digest = true, .fetch = true});
  FleetOptions o;
  o.verify = VerifyMode::kRequired;
  auto results = Run(o);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(results[i].result, "ok") << results[i].error;
    for (const StepResult& s : results[i].steps) {
      EXPECT_TRUE(s.written);
      EXPECT_EQ(s.verify, "ok");
      EXPECT_EQ(s.verify_method, i == 0 ? "readback" : "digest");
      EXPECT_EQ(s.verify_note, "");
    }
  }
  EXPECT_TRUE(Flashed(d));
  EXPECT_EQ(d->fetched_bytes, boot_.size() + system_.size());  // every byte the images define
  EXPECT_EQ(g->fetched_bytes, 0u);
  std::string json = FleetJson(results, 1);
  EXPECT_NE(json.find("\"verify\": \"ok\", \"verify_method\": \"readback\", \"written\": true"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"not_verified\": []"), std::string::npos) << json;
}

TEST_F(FleetTest, AByteTheDeviceGotWrongIsAMismatchAndThePartitionStaysWritten) {
  auto* d = Add({.serial = "flipper", .fetch = true, .corrupt_at = 4096 * 10 + 1});  // flips a byte of each
  FleetOptions o;
  o.verify = VerifyMode::kIfAble;
  auto results = Run(o);
  EXPECT_EQ(results[0].result, "mismatch") << results[0].error;
  EXPECT_EQ(results[0].error_class, "verify_mismatch");
  ASSERT_EQ(results[0].steps.size(), 1u);  // boot fails its check; system is not flashed
  const StepResult& s = results[0].steps[0];
  EXPECT_TRUE(s.written);
  EXPECT_EQ(s.verify, "mismatch");
  EXPECT_EQ(s.verify_method, "readback");
  EXPECT_NE(s.error.find("verify: boot_a bytes 0..307200: read back sha256"), std::string::npos) << s.error;
  EXPECT_EQ(d->flashes["boot_a"], 1);
  EXPECT_EQ(d->flashes.count("system"), 0u);
  std::string json = FleetJson(results, 1);
  EXPECT_NE(json.find("\"written\": [\"boot_a\"], \"partly_written\": []"), std::string::npos) << json;
}

}  // namespace
}  // namespace flashpipe::host
