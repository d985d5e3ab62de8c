#include "host/fleet.h"

#include <algorithm>
#include <cerrno>
#include <thread>

#include <fmt/ranges.h>

#include "base/json.h"
#include "base/units.h"
#include "input/write_report.h"

namespace flashpipe::host {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

// The shared feeds, one per step, made when the first device comes to it.
class Fleet::Hub {
 public:
  Hub(const std::vector<FlashStep>& steps, const std::vector<std::shared_ptr<const ImagePlan>>& plans,
      const FeedOptions& options, size_t devices)
      : steps_(steps), plans_(plans), options_(options), devices_(devices), feeds_(steps.size()),
        done_(steps.size(), std::vector<bool>(devices, false)), abandoned_(devices, false) {}

  std::unique_ptr<Cursor> Join(size_t s, size_t d) {
    std::lock_guard lock(mu_);
    if (abandoned_[d]) return Alone(s);
    if (!feeds_[s] && Pending(s) > 0) {
      feeds_[s] = Feed::Start(steps_[s].image, plans_[s], options_, devices_);
      for (size_t o = 0; o < devices_; ++o) {
        if (abandoned_[o] || done_[s][o]) feeds_[s]->Leave(o);
      }
    }
    auto feed = feeds_[s];
    Done(s, d);
    return std::make_unique<Cursor>(std::move(feed), d);
  }

  // A feed of its own (a retry).
  std::unique_ptr<Cursor> Alone(size_t s) {
    FeedOptions mine = options_;
    mine.window_bytes = options_.private_window_bytes;
    return std::make_unique<Cursor>(Feed::Start(steps_[s].image, plans_[s], mine, 1), 0);
  }

  // Device d reads no shared feed any more.
  void Abandon(size_t d) {
    std::lock_guard lock(mu_);
    abandoned_[d] = true;
    for (size_t s = 0; s < feeds_.size(); ++s) {
      if (done_[s][d]) continue;
      if (feeds_[s]) feeds_[s]->Leave(d);
      Done(s, d);
    }
  }

 private:
  size_t Pending(size_t s) const { return static_cast<size_t>(std::count(done_[s].begin(), done_[s].end(), false)); }
  // Once every device came to step s (or gave up), the hub lets go of its
  // feed: the cursors keep it as long as they read.
  void Done(size_t s, size_t d) {
    done_[s][d] = true;
    if (Pending(s) == 0) feeds_[s].reset();
  }

  const std::vector<FlashStep>& steps_;
  const std::vector<std::shared_ptr<const ImagePlan>>& plans_;
  FeedOptions options_;
  size_t devices_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Feed>> feeds_;
  std::vector<std::vector<bool>> done_;  // [step][device]: joined or gave up
  std::vector<bool> abandoned_;
};

struct Fleet::Live {
  DeviceProgress progress;
  const FastbootClient* client = nullptr;
  uint64_t bytes_before = 0;  // sent by earlier connections
  Clock::time_point start;
};

// One device's flash of one step, told as progress and event lines.
class Fleet::Observer : public FlashObserver {
 public:
  Observer(Fleet* f, size_t d) : f_(f), d_(d) {}
  void OnSending(std::string_view partition, size_t index, size_t count, uint64_t bytes, bool) override {
    part_ = index;
    count_ = count;
    bytes_ = bytes;
    partition_ = partition;
    times_.push_back({.bytes = bytes});
    t0_ = Clock::now();
    Set("sending");
  }
  void OnSent(const Status& st) override {
    times_.back().send_seconds = Since(t0_);
    if (!st.ok()) f_->Event(d_, fmt::format("{} part {}: sending failed: {}", partition_, Of(), st.ToString()));
  }
  void OnWriting(std::string_view) override {
    t0_ = Clock::now();
    Set("writing");
  }
  void OnWritten(const Status& st) override {
    times_.back().write_seconds = Since(t0_);
    const PartTiming& t = times_.back();
    if (st.ok()) {
      f_->Event(d_, fmt::format("{} part {} written ({}): sent in {:.2f} s, written in {:.2f} s", partition_, Of(),
                                FormatBytes(bytes_), t.send_seconds, t.write_seconds));
    } else {
      f_->Event(d_, fmt::format("{} part {}: {}", partition_, Of(), st.ToString()));
    }
  }
  const std::vector<PartTiming>& times() const { return times_; }
  void OnStep(std::string_view what) override { f_->Event(d_, std::string(what)); }
  void OnStepDone(const Status& st) override {
    if (!st.ok()) f_->Event(d_, st.ToString());
  }

 private:
  std::string Of() const { return count_ > 0 ? fmt::format("{}/{}", part_, count_) : fmt::format("{}", part_); }
  void Set(const char* phase) {
    std::lock_guard lock(f_->mu_);
    auto& p = f_->live_[d_]->progress;
    p.phase = phase;
    p.partition = partition_;
    p.part = part_;
    p.parts = count_;
  }
  Fleet* f_;
  size_t d_;
  std::string partition_;
  size_t part_ = 0, count_ = 0;
  uint64_t bytes_ = 0;
  std::vector<PartTiming> times_;
  Clock::time_point t0_;
};

Fleet::Fleet(std::vector<std::string> devices, std::vector<FlashStep> steps, Connector connect, FleetOptions options,
             EventFn events)
    : devices_(std::move(devices)), steps_(std::move(steps)), connect_(std::move(connect)),
      options_(std::move(options)), events_(std::move(events)) {
  for (size_t d = 0; d < devices_.size(); ++d) live_.push_back(std::make_unique<Live>());
}

Fleet::~Fleet() = default;

Status Fleet::Prepare() {
  size_t from_stdin = 0;
  for (const FlashStep& s : steps_) from_stdin += s.image.path == "-";
  if (from_stdin > 1) return InvalidArgument("stdin can be the image of one step only");
  for (const FlashStep& s : steps_) {
    FP_ASSIGN_OR_RETURN(auto plan, PlanImage(s.image));
    plans_.push_back(std::move(plan));
  }
  if (options_.verify != VerifyMode::kOff) {
    for (const FlashStep& s : steps_) {
      FP_ASSIGN_OR_RETURN(auto ranges, ImageDigests(s.image));
      digests_.push_back(std::move(ranges));
    }
  }
  hub_ = std::make_unique<Hub>(steps_, plans_, options_.feed, devices_.size());
  return Status::Ok();
}

void Fleet::Event(size_t d, const std::string& line, bool notice) {
  if (events_) events_(d, line, notice);
}

std::vector<DeviceResult> Fleet::Run() {
  start_ = Clock::now();
  results_.assign(devices_.size(), DeviceResult{});
  std::vector<std::thread> threads;
  for (size_t d = 0; d < devices_.size(); ++d) threads.emplace_back([this, d] { RunDevice(d); });
  for (auto& t : threads) t.join();
  return results_;
}

std::vector<DeviceProgress> Fleet::Progress() const {
  std::lock_guard lock(mu_);
  std::vector<DeviceProgress> out;
  for (const auto& l : live_) {
    DeviceProgress p = l->progress;
    p.bytes = l->bytes_before + (l->client ? l->client->data_bytes() : 0);
    p.seconds = l->start == Clock::time_point{} ? 0 : Since(l->start);
    out.push_back(p);
  }
  return out;
}

void Fleet::RunDevice(size_t d) {
  DeviceResult& r = results_[d];
  r.device = devices_[d];
  {
    std::lock_guard lock(mu_);
    live_[d]->start = Clock::now();
    live_[d]->progress.steps = steps_.size();
  }
  size_t next = 0;
  for (int attempt = 0;; ++attempt) {
    r.attempts = attempt + 1;
    Status st = Attempt(d, attempt, &next);
    if (st.ok()) {
      r.result = "ok";
      r.error.clear();
      r.error_class.clear();
      break;
    }
    hub_->Abandon(d);
    r.error = st.ToString();
    r.error_class = input::ErrorClass(st.code());
    Event(d, fmt::format("{}: {}", r.result, r.error));
    if (r.result != "gone" || attempt >= options_.retries) break;
    std::lock_guard lock(mu_);
    live_[d]->progress.phase = "waiting";
  }
  hub_->Abandon(d);
  r.seconds = Since(live_[d]->start);
  std::lock_guard lock(mu_);
  live_[d]->progress.phase = r.result == "ok" ? "done" : r.result;
}

Status Fleet::Reconnect(size_t d, std::unique_ptr<Transport>* out) {
  auto end = Clock::now() + options_.retry_wait;
  Event(d, fmt::format("waiting up to {} s for it to come back", options_.retry_wait.count() / 1000));
  for (;;) {
    auto t = connect_(d);
    if (t.ok()) {
      *out = std::move(*t);
      return Status::Ok();
    }
    if (Clock::now() + std::chrono::seconds(1) >= end) {
      return t.status().WithContext(fmt::format("not back after {} s", options_.retry_wait.count() / 1000));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

namespace {

// A device that is not there yet, as opposed to one that is there and
// cannot be used (held by another program, no permission, a broken answer):
// no such USB device, a refused TCP connection, a closed UDP port, no route
// or no answer yet.
bool NotThereYet(const Status& st) {
  switch (st.sys_errno()) {
    case ECONNREFUSED: case EHOSTUNREACH: case ENETUNREACH: case ETIMEDOUT: return true;
    default: break;
  }
  return st.code() == Code::kNotFound || st.code() == Code::kTimedOut ||
         (st.code() == Code::kCancelled && st.message().find("port is closed") != std::string::npos);
}

}  // namespace

Result<std::unique_ptr<Transport>> Fleet::FirstConnect(size_t d) {
  auto t = connect_(d);
  if (t.ok() || !NotThereYet(t.status())) return t;
  Event(d, fmt::format("< waiting for {} >", devices_[d]), /*notice=*/true);
  {
    std::lock_guard lock(mu_);
    live_[d]->progress.phase = "waiting";
  }
  auto start = Clock::now();
  for (;;) {
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (options_.wait && waited >= *options_.wait) {
      results_[d].result = "absent";
      return t.status().WithContext(
          fmt::format("not there after waiting {:.1f} s (--wait)", std::chrono::duration<double>(*options_.wait).count()));
    }
    auto pause = std::chrono::milliseconds(200);
    if (options_.wait) pause = std::min(pause, *options_.wait - waited);
    std::this_thread::sleep_for(pause);
    t = connect_(d);
    if (t.ok() || !NotThereYet(t.status())) return t;
  }
}

Status Fleet::Attempt(size_t d, int attempt, size_t* next) {
  DeviceResult& r = results_[d];
  r.result = "gone";  // until connected
  {
    std::lock_guard lock(mu_);
    live_[d]->progress.phase = "connecting";
  }
  std::unique_ptr<Transport> transport;
  if (attempt == 0) {
    FP_ASSIGN_OR_RETURN(transport, FirstConnect(d));
  } else {
    FP_RETURN_IF_ERROR(Reconnect(d, &transport));
  }
  DeviceSession s(std::move(transport), [this, d](std::string_view info) {
    Event(d, fmt::format("(bootloader) {}", info), /*notice=*/true);
  });
  s.set_check_partitions(options_.check_partitions);
  s.set_stream_flash(true);
  {
    std::lock_guard lock(mu_);
    live_[d]->client = &s.client();
  }
  struct Unhook {
    Fleet* f;
    size_t d;
    DeviceSession& s;
    ~Unhook() {
      std::lock_guard lock(f->mu_);
      f->live_[d]->bytes_before += s.client().data_bytes();
      f->live_[d]->client = nullptr;
    }
  } unhook{this, d, s};
  if (r.serial.empty()) {
    auto serial = s.client().GetVar("serialno");
    if (serial.ok()) r.serial = *serial;
    if (!serial.ok() && !s.client().refused()) return serial.status();
  }
  for (size_t i = *next; i < steps_.size(); ++i) {
    const FlashStep& step = steps_[i];
    StepResult sr{.partition = step.partition, .image = step.image.path, .attempt = attempt + 1};
    auto t0 = Clock::now();
    {
      std::lock_guard lock(mu_);
      live_[d]->progress.step = i + 1;
      live_[d]->progress.partition = step.partition;
      live_[d]->progress.part = live_[d]->progress.parts = 0;
    }
    Status st;
    auto names = s.Partitions(step.partition, options_.slot);
    if (!names.ok()) {
      st = names.status();
    } else if (names->size() != 1) {
      st = InvalidArgument(fmt::format("{} stands for {} partitions: flash them one by one", step.partition, names->size()));
    } else {
      sr.target = names->front();
      auto cursor = attempt == 0 ? hub_->Join(i, d) : hub_->Alone(i);
      Observer observer(this, d);
      FlashStats stats;
      st = s.FlashImage(sr.target, *cursor, observer, &stats);
      sr.part_times = observer.times();
      sr.parts = stats.parts;
      sr.parts_planned = stats.parts_planned;
      sr.bytes = stats.bytes;
      sr.changed = stats.started;
      sr.read_alone = attempt > 0 || cursor->reopened();
      sr.written = st.ok();
      if (st.ok() && options_.verify != VerifyMode::kOff) st = Verify(d, s, digests_[i], &sr);
    }
    sr.seconds = Since(t0);
    sr.result = st.ok() ? "ok" : "failed";
    if (!st.ok()) {
      sr.error = st.ToString();
      sr.error_class = input::ErrorClass(st.code());
      r.result = st.code() == Code::kMismatch ? "mismatch" : std::string(ResultName(s.client().last_failure()));
    }
    r.bytes += sr.bytes;
    r.steps.push_back(sr);
    if (!st.ok()) return st;
    Event(d, fmt::format("{} done ({} in {} parts, {:.2f} s)", sr.target, FormatBytes(sr.bytes), sr.parts, sr.seconds));
    *next = i + 1;
  }
  r.result = "ok";
  std::vector<std::string> unverified;
  for (const StepResult& sr : r.steps) {
    if (sr.written && !sr.verify_note.empty()) unverified.push_back(sr.target);
  }
  if (options_.verify == VerifyMode::kRequired && !unverified.empty()) {
    r.result = "unverified";
    return Unsupported(fmt::format("written but not verified (--verify=required): {}: the device has no digest "
                                   "or read-back command", fmt::format("{}", fmt::join(unverified, ", "))));
  }
  if (options_.reboot) {
    Status st = s.client().Command("reboot").status();
    if (!st.ok()) Event(d, fmt::format("reboot: {}", st.ToString()));
  }
  return Status::Ok();
}

// --verify of one written step: OK when verified, or when the device cannot
// verify (then the step says so, and the flash goes on); the failure when the
// device holds other bytes or its answer broke off.
Status Fleet::Verify(size_t d, DeviceSession& s, const std::vector<DigestRange>& ranges, StepResult* sr) {
  Event(d, fmt::format("{} verifying ({} ranges)", sr->target, ranges.size()));
  {
    std::lock_guard lock(mu_);
    live_[d]->progress.phase = "verifying";
    live_[d]->progress.part = live_[d]->progress.parts = 0;
  }
  VerifyResult how;
  Status st = VerifyOnDevice(s.client(), sr->target, ranges, &how);
  sr->verify_method = how.method;
  if (st.ok() && !how.unavailable.empty()) {
    sr->verify = "not_run";
    sr->verify_note = fmt::format("written, not verified (device has no digest or read-back command: {})",
                                  how.unavailable);
    Event(d, fmt::format("{} {}", sr->target, sr->verify_note));
    return Status::Ok();
  }
  if (st.ok()) {
    sr->verify = "ok";
    if (!how.method.empty()) Event(d, fmt::format("{} verified ({})", sr->target, how.method));
  } else {
    sr->verify = st.code() == Code::kMismatch ? "mismatch" : "failed";
  }
  return st;
}

std::string_view ResultName(FastbootClient::Failure failure) {
  switch (failure) {
    case FastbootClient::Failure::kRefused: return "refused";
    case FastbootClient::Failure::kGone: return "gone";
    default: return "failed";
  }
}

namespace {

std::string StepJson(const StepResult& s) {
  std::string times;
  for (const PartTiming& t : s.part_times) {
    times += fmt::format("{}{{\"bytes\": {}, \"send_seconds\": {:.3f}, \"write_seconds\": {:.3f}}}",
                         times.empty() ? "" : ", ", t.bytes, t.send_seconds, t.write_seconds);
  }
  return fmt::format(
      "{{\"partition\": {}, \"target\": {}, \"image\": {}, \"result\": {}, \"error\": {}, \"error_class\": {}, "
      "\"parts\": {}, \"parts_planned\": {}, \"bytes\": {}, \"seconds\": {:.3f}, \"changed\": {}, \"attempt\": {}, "
      "\"read_alone\": {}, \"verify\": {}, \"verify_method\": {}, \"written\": {}, \"verify_note\": {}, \"part_times\": [{}]}}",
      JsonString(s.partition), JsonString(s.target), JsonString(s.image), JsonString(s.result), JsonString(s.error),
      JsonString(s.error_class), s.parts, s.parts_planned, s.bytes, s.seconds, s.changed, s.attempt, s.read_alone,
      JsonString(s.verify), JsonString(s.verify_method), s.written, JsonString(s.verify_note), times);
}

}  // namespace

std::string FleetJson(const std::vector<DeviceResult>& results, double seconds,
                      const std::vector<fetch::FetchReport>& downloads) {
  std::string devices;
  size_t ok = 0;
  for (const DeviceResult& r : results) {
    ok += r.result == "ok";
    std::string steps, written, partly, unverified;
    auto add = [](std::string& list, const std::string& name) { list += (list.empty() ? "" : ", ") + JsonString(name); };
    for (const StepResult& s : r.steps) {
      steps += (steps.empty() ? "" : ", ") + StepJson(s);
      if (s.written) add(written, s.target);
      if (!s.written && s.changed) add(partly, s.target);
      if (s.written && !s.verify_note.empty()) add(unverified, s.target);
    }
    devices += fmt::format(
        "{}{{\"device\": {}, \"serial\": {}, \"result\": {}, \"error\": {}, \"error_class\": {}, \"bytes\": {}, "
        "\"seconds\": {:.3f}, \"attempts\": {}, \"written\": [{}], \"partly_written\": [{}], "
        "\"not_verified\": [{}], \"steps\": [{}]}}",
        devices.empty() ? "" : ", ", JsonString(r.device), JsonString(r.serial), JsonString(r.result),
        JsonString(r.error), JsonString(r.error_class), r.bytes, r.seconds, r.attempts, written, partly, unverified,
        steps);
  }
  std::string fetched;
  for (const fetch::FetchReport& d : downloads) fetched += (fetched.empty() ? "" : ", ") + fetch::FetchReportJson(d);
  return fmt::format("{{\"schema\": \"flashpipe-flash\", \"schema_version\": 1, \"devices\": [{}], \"ok\": {}, "
                     "\"failed\": {}, \"seconds\": {:.3f}, \"downloads\": [{}]}}", devices, ok,
                     results.size() - ok, seconds, fetched);
}

}  // namespace flashpipe::host
