// Fleet: `flashpipe flash` — one list of PARTITION=IMAGE steps flashed to
// many devices at once, each image read and decoded once for all of them.
//
// Every image is planned first (image_pass.h), so a bad image stops the
// run before any device is touched. Then each device runs on its own
// thread: connect, then the steps in order, each one resolved for the
// device (has-slot), resized when logical, cut into parts for the device's
// own max-download-size and sent (DeviceSession). Each step's image comes
// through one shared Feed; a device that falls behind the window reads on
// its own (feed.h), one that fails or vanishes leaves it, so neither stalls
// or fails the others. Each device's outcome is its own: what it wrote,
// where it stopped and why. With retries, a device that went away (or went
// silent) is connected again (for up to retry_wait) and its steps redone
// from the first one it had not finished, reading the images on its own; a
// device that refused (FAIL) is not retried.
//
// A device that is not there yet when the run starts (no USB device with
// that serial, a refused TCP connection, a closed UDP port: U-Boot binds
// its socket on its first reply) is waited for, as the AOSP client does:
// "< waiting for DEVICE >" once, then connection attempts until `wait`
// runs out (unset: until it comes), then "absent". "gone" is for a device
// that was there and went away. A device that is there but cannot be used
// (another program holds its interface, no permission) fails at once.
//
// Before a partition is sent to, the device is asked whether it has it
// (DeviceSession::CheckPartition): one it says it does not have is refused
// without a byte sent. --verify checks each partition with the device's
// `oem digest` where it has one, else by reading it back with `fetch:`
// (hashed on the host; verify.h); on a device with neither the partition is
// written, not verified (the step says why), and the flash goes on; with
// VerifyMode::kRequired the device's result is "unverified" after all its
// partitions were flashed.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "fetch/remote_file.h"
#include "host/device_session.h"
#include "host/feed.h"
#include "host/image_pass.h"
#include "host/transport.h"
#include "host/verify.h"

namespace flashpipe::host {

struct FlashStep {
  std::string partition;  // as given: "boot" may become "boot_a"
  ImageSpec image;
};

// Opens a transport to device `index` (attempt: 0 first, then retries).
using Connector = std::function<Result<std::unique_ptr<Transport>>(size_t index)>;

enum class VerifyMode {
  kOff,
  kIfAble,    // --verify: where the device has oem digest or fetch:; else "not verified" and go on
  kRequired,  // --verify=required: a partition that could not be verified fails the device, after all are flashed
};

struct FleetOptions {
  FeedOptions feed;
  std::string slot;        // --slot: "" (current), "a", "b", "other"
  int retries = 0;
  std::chrono::milliseconds retry_wait{30000};
  std::optional<std::chrono::milliseconds> wait;  // for a device not there yet; unset: until it comes
  bool reboot = false;     // reboot each device that finished
  bool check_partitions = true;  // ask the device for each partition before sending to it
  VerifyMode verify = VerifyMode::kOff;  // after each step, compare every range by digest or read-back (verify.h)
};

// One download and its flash command, as the AOSP client times them.
struct PartTiming {
  uint64_t bytes = 0;
  double send_seconds = 0, write_seconds = 0;  // download; flash:PART until its OKAY/FAIL
};

struct StepResult {
  std::string partition;   // as given
  std::string target;      // the partition flashed ("boot_a")
  std::string image;
  std::string result;      // "ok", "failed", "skipped"
  std::string error;
  std::string error_class;
  size_t parts = 0, parts_planned = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  bool changed = false;    // a flash command was sent: the partition may have changed
  bool written = false;    // every part was flashed (OKAY), verified or not
  int attempt = 1;
  bool read_alone = false;  // read the image on its own (fell behind, or a retry)
  std::string verify = "not_run";  // --verify: "ok", "mismatch", "failed", or "not_run"
  std::string verify_method;       // how it was verified: "digest" (oem digest), "readback" (fetch:), "" (not)
  std::string verify_note;         // why a written partition was not verified
  std::vector<PartTiming> part_times;  // every part sent, in order
};

struct DeviceResult {
  std::string device;      // as given
  std::string serial;
  // "ok"; "refused" (the device said FAIL); "gone" (it vanished or went
  // silent); "absent" (never there within --wait); "mismatch" (--verify: the device holds other bytes than were
  // sent); "unverified" (--verify=required: every partition written, one or
  // more could not be verified); "failed" (the image or the host).
  std::string result = "failed";
  std::string error;
  std::string error_class;
  std::vector<StepResult> steps;
  uint64_t bytes = 0;
  double seconds = 0;
  int attempts = 0;
};

// What a device is doing, for a progress line.
struct DeviceProgress {
  std::string phase;       // "connecting", "sending", "writing", "verifying", "done", "failed", "waiting"
  std::string partition;
  size_t step = 0, steps = 0;
  size_t part = 0, parts = 0;
  uint64_t bytes = 0;      // sent so far
  double seconds = 0;
};

class Fleet {
 public:
  // A line about device `device`; `notice`: one the user sees even without
  // progress output, as the AOSP client prints it ("< waiting for X >",
  // "(bootloader) ..." from the device).
  using EventFn = std::function<void(size_t device, const std::string& line, bool notice)>;
  Fleet(std::vector<std::string> devices, std::vector<FlashStep> steps, Connector connect, FleetOptions options,
        EventFn events = {});
  ~Fleet();

  // Plans every image; an error here means nothing was sent to any device.
  Status Prepare();
  // Flashes every device; one result per device, in the order given.
  std::vector<DeviceResult> Run();
  std::vector<DeviceProgress> Progress() const;

 private:
  class Hub;
  class Observer;
  struct Live;
  void RunDevice(size_t d);
  Status Attempt(size_t d, int attempt, size_t* next);
  Status Reconnect(size_t d, std::unique_ptr<Transport>* out);
  Result<std::unique_ptr<Transport>> FirstConnect(size_t d);
  Status Verify(size_t d, DeviceSession& s, const std::vector<DigestRange>& ranges, StepResult* sr);
  void Event(size_t d, const std::string& line, bool notice = false);

  std::vector<std::string> devices_;
  std::vector<FlashStep> steps_;
  Connector connect_;
  FleetOptions options_;
  EventFn events_;
  std::vector<std::shared_ptr<const ImagePlan>> plans_;
  std::vector<std::vector<DigestRange>> digests_;  // per step, with verify
  std::unique_ptr<Hub> hub_;
  std::vector<DeviceResult> results_;
  std::vector<std::unique_ptr<Live>> live_;
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point start_;
};

// The result's class from a failed Status and where it came from.
std::string_view ResultName(FastbootClient::Failure failure);

// The whole run as one JSON object (--json; docs/schema/flash-report.schema.json):
// {"schema": "flashpipe-flash", "schema_version": 1, "devices": [...], ...}.
// `downloads`: what fetching the images at URLs did, in step order.
std::string FleetJson(const std::vector<DeviceResult>& results, double seconds,
                      const std::vector<fetch::FetchReport>& downloads = {});

}  // namespace flashpipe::host
