// flashpipe flash [-s DEVICE]... [--all] PARTITION=IMAGE...
// Flashes images to many fastboot devices at once (USB, TCP, UDP), each
// image read once for all of them; see src/host/fleet.h.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "base/units.h"
#include "base/utf8.h"
#include "fetch/url.h"
#include "host/device_address.h"
#include "host/fleet.h"
#include "host/fleet_progress.h"
#include "host/libusb_backend.h"
#include "input/remote_image.h"
#include "tools/commands.h"
#include "tools/fetch_flags.h"
#include "tools/flags.h"

namespace flashpipe::tools {
namespace {

struct Flags {
  std::vector<std::string> devices, steps, bmaps;
  bool all = false, no_progress = false, reboot = false, no_sendfile = false, no_partition_check = false;
  std::string slot, window = "32M", json, verify;
  int retries = 0;
  double retry_wait = 30, timeout = 120, lag_limit = 3, wait = -1;
  FetchFlags fetch;
};

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("PARTITION=IMAGE", f.steps,
                 "what to flash, in order (IMAGE: raw, sparse, gzip/xz/zstd/bzip2/lz4, - for stdin, an http(s) URL)")
      ->required();
  app.add_option("-s,--device", f.devices,
                 "a device: USB serial, usb:PATH, tcp:HOST[:PORT] or udp:HOST[:PORT] (repeat for more)")
      ->allow_extra_args(false);  // one value per -s: the steps follow
  app.add_flag("--all", f.all, "every fastboot USB device present");
  app.add_option("--bmap", f.bmaps,
                 "PARTITION=FILE: a bmaptool map for that partition's raw image (unmapped: not sent)")
      ->allow_extra_args(false);
  app.add_option("--slot", f.slot, "slot for partitions that have slots: a, b or other (default: the current one)");
  app.add_option("--retry", f.retries, "flash a device that went away again, up to N times, from its first unfinished "
                                       "partition")->check(CLI::Range(0, 100));
  app.add_option("--retry-wait", f.retry_wait, "seconds to wait for a device that went away to come back (default 30)");
  app.add_option("--timeout", f.timeout, "seconds a device may stay silent mid-command (default 120)");
  app.add_option("--window", f.window, "memory shared by all devices for each image's data (default 32M)");
  app.add_option("--lag-limit", f.lag_limit,
                 "seconds after which a device that keeps the others waiting reads the image on its own (default 3)");
  app.add_flag("--no-sendfile", f.no_sendfile,
               "TCP and USB devices take the data of a sparse or raw file from the shared window too (one copy per "
               "device), not from the file (TCP: by sendfile; USB: read into its transfers)");
  app.add_flag("--reboot", f.reboot, "reboot each device once it is flashed");
  app.add_flag("--verify{auto}", f.verify,
               "after each partition, compare the SHA-256 of every range the image defines with what the device "
               "has: its digest (oem digest, flashpipe serve), else the range read back (fetch:, as fastbootd; in "
               "pieces of its max-fetch-size, hashed here); the images are read once more first (not stdin). A "
               "device with neither (U-Boot): the partition is reported written, not verified, and the flash goes "
               "on; --verify=required: then the device fails, once all its partitions are flashed. The report's "
               "verify_method says which was used")
      ->check(CLI::IsMember({"auto", "required"}));
  app.add_option("--wait", f.wait,
                 "seconds to wait for a device that is not there yet (no such USB device, a refused connection, "
                 "a closed UDP port), printing '< waiting for DEVICE >' (default: until it comes, as the AOSP "
                 "client; 0: not at all)");
  app.add_flag("--no-partition-check", f.no_partition_check,
               "send to a partition even when the device says it has none (getvar partition-size and "
               "partition-type both FAIL): names a bootloader handles itself, such as U-Boot's 'gpt'");
  AddJsonFlag(app, f.json, "the report (every device, every step)");
  app.add_flag("--no-progress", f.no_progress, "no progress output");
  AddFetchFlags(app, f.fetch);
  app.footer(
      "Every image is read and checked before any device is touched, then read once more while it is sent to all\n"
      "devices at once, cut for each device's max-download-size (TCP devices get a sparse or raw file's data\n"
      "straight from the file by sendfile). A device that fails or vanishes fails alone; one\n"
      "that is slower than the others reads the image on its own. Exit status 0 when every device was flashed.\n"
      "A device that answers getvar stream-flash 'yes' (flashpipe serve) hears each part's partition before\n"
      "its download (stream-flash:PART) and writes it while it arrives; others get the AOSP client's commands.\n"
      "An http(s) IMAGE (or --bmap) is fetched into the cache first, once for all devices (a raw image with a bmap:\n"
      "only its mapped ranges), and flashed from there.");
}

// Images at URLs: fetched (once for every device) into the cache, then
// flashed from their entries, which `held` keeps in use.
Status FetchUrlImages(const FetchFlags& flags, std::vector<host::FlashStep>& steps,
                      std::vector<input::FetchedImage>* held) {
  size_t urls = std::count_if(steps.begin(), steps.end(), [](const auto& s) { return fetch::IsUrl(s.image.path); });
  for (host::FlashStep& s : steps) {
    if (!fetch::IsUrl(s.image.path)) continue;
    input::SourceOptions o;
    FP_RETURN_IF_ERROR(ApplyFetchFlags(flags, urls == 1 ? s.image.path : "", &o, nullptr));
    if (!flags.sha256sums.empty() && urls > 1) {
      FP_RETURN_IF_ERROR(input::ApplySha256Sums(flags.sha256sums, s.image.path, &o));
    }
    o.bmap_path = s.image.bmap;
    o.find_bmap = s.image.bmap.empty();
    std::fprintf(stderr, "flashpipe flash: fetching %s\n", fetch::DisplayUrl(s.image.path).c_str());
    FP_ASSIGN_OR_RETURN(input::FetchedImage f, input::FetchImage(s.image.path, o));
    std::fprintf(stderr, "flashpipe flash: %s: %s\n", f.report.url.c_str(), fetch::FetchSummary(f.report).c_str());
    s.image = {f.path, f.bmap};
    held->push_back(std::move(f));
  }
  return Status::Ok();
}

std::chrono::milliseconds Ms(double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); }

Result<std::vector<host::FlashStep>> Steps(const Flags& f) {
  std::vector<host::FlashStep> steps;
  for (const std::string& s : f.steps) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
      return InvalidArgument(fmt::format("'{}': expected PARTITION=IMAGE", s));
    }
    steps.push_back({s.substr(0, eq), {s.substr(eq + 1)}});
  }
  for (const std::string& b : f.bmaps) {
    size_t eq = b.find('=');
    auto it = std::find_if(steps.begin(), steps.end(),
                           [&](const host::FlashStep& s) { return s.partition == b.substr(0, eq); });
    if (eq == std::string::npos || it == steps.end()) {
      return InvalidArgument(fmt::format("--bmap '{}': expected PARTITION=FILE of a partition to flash", b));
    }
    it->image.bmap = b.substr(eq + 1);
  }
  return steps;
}

Result<std::vector<std::string>> Devices(const Flags& f, host::UsbBackend* usb) {
  std::vector<std::string> devices = f.devices;
  if (f.all) {
    if (usb == nullptr) return Unsupported("--all: USB is not available");
    FP_ASSIGN_OR_RETURN(auto list, usb->List());
    for (const host::UsbDeviceInfo& d : list) devices.push_back(d.serial.empty() ? "usb:" + d.path : d.serial);
  }
  std::set<std::string> seen;
  std::vector<std::string> unique;
  for (const std::string& d : devices) {
    if (seen.insert(d).second) unique.push_back(d);
  }
  if (unique.empty()) {
    return InvalidArgument(f.all ? "no fastboot USB device found" : "no device: give -s DEVICE or --all");
  }
  return unique;
}

void Summary(const std::vector<host::DeviceResult>& results) {
  for (const auto& r : results) {
    std::string written;
    for (const auto& s : r.steps) {
      if (!s.written) continue;
      written += " " + s.target;
      if (!s.verify_note.empty()) {
        written += " (not verified)";
      } else if (s.verify == "ok" && !s.verify_method.empty()) {
        written += s.verify_method == "digest" ? " (verified by digest)" : " (verified by read-back)";
      }
    }
    std::fprintf(stderr, "%s: %s%s, %s in %.2f s%s%s\n", TerminalText(r.device).c_str(), r.result.c_str(),
                 written.empty() ? "" : TerminalText(" (" + written.substr(1) + ")").c_str(),
                 FormatBytes(r.bytes).c_str(), r.seconds, r.error.empty() ? "" : ": ", TerminalText(r.error).c_str());
  }
}

}  // namespace

int RunFlash(int argc, char** argv) {
  CLI::App app{"Flash images to many fastboot devices at once (USB, TCP, UDP)", CommandName(argv[0])};
  Flags f;
  AddFlags(app, f);
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  auto steps = Steps(f);
  if (!steps.ok()) return UsageError(app, steps.status());
  std::vector<std::string> inputs;
  for (const host::FlashStep& s : *steps) inputs.insert(inputs.end(), {s.image.path, s.image.bmap});
  if (Status s = CheckJsonFile(f.json, inputs); !s.ok()) return UsageError(app, s);
  auto window = ParseSize(f.window);
  if (!window.ok() || *window < (2 << 20)) return UsageError(app, InvalidArgument("--window: a size of at least 2M"));
  bool uses_usb = f.all;
  std::vector<host::DeviceAddress> addresses;
  for (const std::string& d : f.devices) uses_usb |= !d.starts_with("tcp:") && !d.starts_with("udp:");
  host::UsbBackend* usb = nullptr;
  if (uses_usb) {
    auto u = host::LibUsb();
    if (!u.ok()) return ExitWith("flash", u.status());
    usb = *u;
  }
  auto devices = Devices(f, usb);
  if (!devices.ok()) return ExitWith("flash", devices.status());
  for (const std::string& d : *devices) {
    auto a = host::ParseDeviceAddress(d);
    if (!a.ok()) return UsageError(app, a.status());
    addresses.push_back(*a);
  }
  host::TransportOptions transport{.idle = Ms(f.timeout)};
  host::FleetOptions options;
  options.feed.window_bytes = *window;
  options.feed.send_files = !f.no_sendfile;
  options.feed.lag_limit = Ms(f.lag_limit);
  options.slot = f.slot;
  options.retries = f.retries;
  options.retry_wait = Ms(f.retry_wait);
  options.reboot = f.reboot;
  options.verify = f.verify.empty()          ? host::VerifyMode::kOff
                   : f.verify == "required" ? host::VerifyMode::kRequired
                                            : host::VerifyMode::kIfAble;
  if (f.wait >= 0) options.wait = Ms(f.wait);
  options.check_partitions = !f.no_partition_check;
  auto mode = f.no_progress || f.json == "-" ? host::FleetProgress::Mode::kOff
              : ::isatty(STDERR_FILENO)     ? host::FleetProgress::Mode::kRedraw
                                            : host::FleetProgress::Mode::kLines;
  std::vector<input::FetchedImage> fetched;
  if (Status st = FetchUrlImages(f.fetch, *steps, &fetched); !st.ok()) return ExitWith("flash", st);
  std::vector<fetch::FetchReport> downloads;
  for (const input::FetchedImage& x : fetched) downloads.push_back(x.report);
  host::FleetProgress progress(stderr, mode, *devices);
  host::Fleet fleet(
      *devices, *steps,
      [&](size_t i) { return host::ConnectDevice(addresses[i], transport, usb); }, options,
      [&](size_t d, const std::string& line, bool notice) { progress.Event(d, line, notice); });
  if (Status st = fleet.Prepare(); !st.ok()) return ExitWith("flash", st);
  auto start = std::chrono::steady_clock::now();
  progress.Start(&fleet);
  auto results = fleet.Run();
  progress.Stop();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (f.json != "-") Summary(results);
  Status st;
  if (!f.json.empty()) st = WriteJson(f.json, host::FleetJson(results, seconds, downloads));
  size_t failed = std::count_if(results.begin(), results.end(), [](const auto& r) { return r.result != "ok"; });
  if (st.ok() && failed > 0) st = Unsupported(fmt::format("{} of {} devices failed", failed, results.size()));
  return ExitWith("flash", st);
}

}  // namespace flashpipe::tools
