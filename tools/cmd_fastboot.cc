// flashpipe fastboot [OPTIONS] COMMAND...
// The AOSP fastboot client's verbs, arguments and output on flashpipe's
// host side; see src/host/fastboot_verbs.h.
#include "base/units.h"
#include "fetch/url.h"
#include "host/fastboot_verbs.h"
#include "host/libusb_backend.h"
#include "tools/commands.h"
#include "tools/fetch_flags.h"
#include "tools/flags.h"

namespace flashpipe::tools {
namespace {

constexpr const char* kCurrentSlot = "(current)";

struct Flags {
  host::FastbootArgs args;
  std::string sparse_limit, set_active;
  double timeout = 120;
  bool verbose = false;
  FetchFlags fetch;
};

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("COMMAND", f.args.commands,
                 "getvar VAR | flash PARTITION [IMAGE] | erase PARTITION | set_active SLOT | reboot [bootloader|"
                 "fastboot|recovery] | devices [-l] | flashall | flashing lock|unlock|... | oem ARGS | continue");
  app.add_option("-s", f.args.serial, "device: USB serial, usb:PATH, tcp:HOST[:PORT] or udp:HOST[:PORT]");
  app.add_option("-S", f.sparse_limit, "cut images into parts no larger than SIZE[K|M|G]");
  app.add_option("--slot", f.args.slot, "slot to use: a, b, other or all (default: the current one)");
  app.add_flag("--set-active{(current)}", f.set_active, "set the active slot (default: --slot or the current one) at the end")
      ->option_text("[=SLOT]");
  app.add_flag("--skip-reboot", f.args.skip_reboot, "do not reboot after flashall");
  app.add_flag("--skip-secondary", f.args.skip_secondary, "do not flash secondary slots in flashall");
  app.add_flag("-w", f.args.wipe, "wipe userdata (erase userdata, cache and metadata)");
  app.add_flag("--force", f.args.force, "force a flash operation that may be unsafe");
  app.add_flag("-l", f.args.long_listing, "devices: with device paths");
  app.add_flag("-v,--verbose", f.verbose, "accepted, as the AOSP client");
  app.add_option("--dir", f.args.product_dir, "flashall and flash without IMAGE: the product folder "
                                              "(default $ANDROID_PRODUCT_OUT)");
  app.add_option("--timeout", f.timeout, "seconds a device may stay silent mid-command (default 120)");
  app.footer("Same commands, arguments and output as the AOSP client 29.0.6 (fastboot), so a script switches by\n"
             "changing the program name. Images are streamed (never held whole), zero blocks are not sent, and every image is cut\n"
             "for the device's max-download-size without the AOSP client's padding bugs. Unlike the AOSP client, a\n"
             "compressed image (gzip, xz, zstd, bzip2, lz4) is decompressed, not sent as it is. IMAGE may be an\n"
             "http(s) URL: fetched into the cache first (with a bmap beside it, only its mapped ranges).");
  AddFetchFlags(app, f.fetch);
}

}  // namespace

int RunFastboot(int argc, char** argv) {
  CLI::App app{"Fastboot client: the AOSP client's verbs (getvar, flash, erase, set_active, reboot, devices, flashall)",
               CommandName(argv[0])};
  Flags f;
  AddFlags(app, f);
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  if (!f.sparse_limit.empty()) {
    auto s = ParseSize(f.sparse_limit);
    if (!s.ok() || *s == 0) return UsageError(app, InvalidArgument(fmt::format("-S {}: not a size", f.sparse_limit)));
    f.args.sparse_limit = *s;
  }
  std::string url;
  for (const std::string& c : f.args.commands)
    if (url.empty() && fetch::IsUrl(c)) url = c;
  f.args.sources.find_bmap = true;
  if (Status s = ApplyFetchFlags(f.fetch, url, &f.args.sources); !s.ok()) return UsageError(app, s);
  if (!f.set_active.empty()) f.args.set_active = f.set_active == kCurrentSlot ? "" : f.set_active;
  f.args.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.timeout * 1000));
  auto usb = host::LibUsb();
  bool usage = false;
  Status st = host::RunFastboot(f.args, usb.ok() ? *usb : nullptr, &usage);
  if (usage) return UsageError(app, st);
  return ExitWith("fastboot", st);
}

}  // namespace flashpipe::tools
