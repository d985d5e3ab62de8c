// flashpipe serve: a fastboot device daemon. The standard fastboot client
// flashes partitions of a GPT disk (--storage) or of named files/ranges
// (--partition) over TCP, UDP and/or USB (a FunctionFS gadget); a `super`
// partition (--super) adds its logical partitions (Android dynamic
// partitions). See src/fastboot/ for the parts.
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/units.h"
#include "fastboot/device.h"
#include "fastboot/misc_slot.h"
#include "fastboot/session.h"
#include "fastboot/storage.h"
#include "fastboot/tcp.h"
#include "fastboot/udp.h"
#include "fastboot/usb_fastboot.h"
#include "partition/partition_job.h"
#include "wire/net.h"
#include "mmc/boot_area.h"
#include "mmc/mmc_device.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/layout_file.h"

namespace flashpipe::tools {
namespace {

using namespace flashpipe::fastboot;

struct ServeOptions {
  std::string storage;
  std::string mmc;  // --mmc: the eMMC for oem partconf/bootbus and, with --storage, its boot areas
  std::vector<std::string> partitions;
  std::string super = "super";
  bool super_given = false;  // --super on the command line: it must exist
  std::string layout;  // --layout FILE, for oem format
  std::string tcp, udp;
  bool no_tcp = false;
  bool usb = false;
  std::string usb_ffs, usb_id = "18d1:4ee0", udc;
  std::string max_download = "256M";
  std::string state;
  std::vector<std::string> oem, oem_safe;
  std::vector<std::string> partition_types;
  std::string initial_lock = "unlocked";
  unsigned oem_timeout_s = 60;
  unsigned session_timeout_s = 3600;
  std::string min_download_rate = "64K";
  unsigned rate_window_s = 10;
  WriterFlags writer;
  std::string write_model;     // --write-model
  uint32_t bounce_blocks = 0;  // hidden alias: --bounce-blocks N = --write-model bounce:N
  bool discard_writes = false; // hidden alias: --discard-writes = --write-model discard
  unsigned idle_timeout_s = 600;
  bool verbose = false;
  DeviceConfig device;
  WriteOptions write;
  std::vector<PartitionSpec> specs;  // --partition, parsed
  std::pair<uint16_t, uint16_t> usb_vid_pid;
};

// The loopback address keeps the security note true: a bare port is never
// reachable from another host.
constexpr std::string_view kDefaultTcp = "127.0.0.1:5554";

// Next to the storage, except for devices: /var/lib/flashpipe/<name>.
Result<std::string> DefaultStatePath(const std::string& base) {
  struct stat st{};
  if (::stat(base.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return base + ".fastboot-state";
  std::string dir = "/var/lib/flashpipe";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("mkdir " + dir);
  return dir + "/" + base.substr(base.rfind('/') + 1) + ".fastboot-state";
}

Result<std::unique_ptr<Storage>> OpenStorage(const ServeOptions& o) {
  if (!o.storage.empty()) {
    std::vector<std::string> warnings;
    auto s = Storage::OpenGpt(o.storage, o.write, &warnings);
    for (const auto& w : warnings) log::Warn("{}", w);
    if (s.ok() && !o.mmc.empty()) {
      for (const auto& area : mmc::FastbootBootAreas(o.mmc)) {
        FP_RETURN_IF_ERROR((*s)->AddWholeDevice(area.name, area.device).WithContext("--mmc " + o.mmc));
      }
    }
    return s;
  }
  return Storage::OpenSpecs(o.specs, o.write);
}

// "5554" means loopback port 5554; anything else must parse as ADDR:PORT.
Status CheckAddress(std::string* text, const char* flag) {
  if (!text->empty() && text->find_first_not_of("0123456789") == std::string::npos) {
    *text = "127.0.0.1:" + *text;
  }
  socklen_t len = 0;
  return wire::ParseHostPort(*text, &len).status().WithContext(flag);
}

// --partition: NAME=PATH[:OFFSET:SIZE]. A path with ':' that does not exist
// is more likely a range that did not parse than a file name.
Status CheckPartitions(ServeOptions* o) {
  if (!o->storage.empty() && !o->partitions.empty()) {
    return InvalidArgument("use either --storage or --partition, not both");
  }
  if (o->storage.empty() && o->partitions.empty()) {
    return InvalidArgument("no storage: give --storage DISK or --partition NAME=PATH");
  }
  for (const auto& text : o->partitions) {
    FP_ASSIGN_OR_RETURN(PartitionSpec spec, ParsePartitionSpec(text));
    struct stat st{};
    if (!spec.ranged && spec.path.find(':') != std::string::npos && ::stat(spec.path.c_str(), &st) != 0) {
      return InvalidArgument(fmt::format("--partition '{}': no file '{}'; expected {}", text, spec.path,
                                         kPartitionSyntax));
    }
    o->specs.push_back(std::move(spec));
  }
  return Status::Ok();
}

// --layout: read and parsed now (a typo is exit 2, not a FAIL on the
// board); resolved on the disk when oem format runs.
Status CheckLayout(ServeOptions* o) {
  if (o->layout.empty()) return Status::Ok();
  if (o->storage.empty()) return InvalidArgument("--layout needs --storage DISK (oem format writes its table)");
  FP_ASSIGN_OR_RETURN(o->device.layout, ReadLayoutFile(o->layout));
  if (o->device.layout.empty()) return InvalidArgument(fmt::format("--layout {}: empty", o->layout));
  if (Status st = partition::ParseLayout(o->device.layout, partition::LayoutFormat::kAuto).status(); !st.ok()) {
    return st.WithContext("--layout " + o->layout);
  }
  o->device.layout_name = o->layout;
  return Status::Ok();
}

// --write-model, or one of its older spellings.
Result<io::WriteModel> WriteModelOf(const ServeOptions& o) {
  if (!o.write_model.empty() + (o.bounce_blocks != 0) + o.discard_writes > 1) {
    return InvalidArgument("give one of --write-model, --bounce-blocks, --discard-writes");
  }
  if (o.bounce_blocks != 0) return io::ParseWriteModel(fmt::format("bounce:{}", o.bounce_blocks));
  if (o.discard_writes) return io::ParseWriteModel("discard");
  return io::ParseWriteModel(o.write_model.empty() ? "pipelined" : o.write_model);
}

// Everything the flags say, checked before any file or device is touched:
// a mistake here exits 2 (the systemd unit does not restart on 2).
Status CheckOptions(ServeOptions* o) {
  FP_RETURN_IF_ERROR(CheckPartitions(o));
  FP_ASSIGN_OR_RETURN(uint64_t mds, ParseSize(o->max_download));
  if (mds < 4096 || mds > 0xFFFFF000u) {
    return InvalidArgument(fmt::format("--max-download-size {} outside [4096, 0xfffff000]", mds));
  }
  o->device.max_download_size = static_cast<uint32_t>(mds);
  for (bool safe : {false, true}) {
    for (const auto& text : safe ? o->oem_safe : o->oem) {
      size_t eq = text.find('=');
      if (eq == std::string::npos || eq == 0) {
        return InvalidArgument(fmt::format("--oem{} '{}': expected NAME=COMMAND", safe ? "-safe" : "", text));
      }
      if (Session::IsBuiltinOem(text.substr(0, eq))) {
        return InvalidArgument(fmt::format("--oem{} '{}': oem {} is built in", safe ? "-safe" : "", text,
                                           text.substr(0, eq)));
      }
      o->device.oem.push_back({text.substr(0, eq), text.substr(eq + 1), safe});
    }
  }
  for (const auto& text : o->partition_types) {
    FP_ASSIGN_OR_RETURN(PartitionTypeSetting setting, ParsePartitionTypeSetting(text));
    o->device.partition_types.push_back(std::move(setting));
  }
  o->device.hook_timeout = std::chrono::seconds(o->oem_timeout_s);
  o->device.limits.session_timeout = std::chrono::seconds(o->session_timeout_s);
  FP_ASSIGN_OR_RETURN(o->device.limits.min_download_rate, ParseRate(o->min_download_rate));  // SI, as every rate
  o->device.limits.rate_window = std::chrono::seconds(o->rate_window_s);
  if (!o->usb_ffs.empty()) o->usb = true;
  if (o->no_tcp && !o->tcp.empty()) return InvalidArgument("--no-tcp and --tcp exclude each other");
  if (!o->no_tcp && o->tcp.empty()) o->tcp = kDefaultTcp;
  if (!o->tcp.empty()) FP_RETURN_IF_ERROR(CheckAddress(&o->tcp, "--tcp"));
  if (!o->udp.empty()) FP_RETURN_IF_ERROR(CheckAddress(&o->udp, "--udp"));
  if (o->tcp.empty() && o->udp.empty() && !o->usb) return InvalidArgument("--no-tcp: give --udp or --usb");
  if (o->usb) {
    FP_ASSIGN_OR_RETURN(o->usb_vid_pid, ParseUsbId(o->usb_id));
  }
  if (o->device.serialno.empty()) o->device.serialno = DefaultSerialNumber();
  return CheckLayout(o);
}

// --misc names a partition that holds a bootloader_message_ab.
Status CheckMisc(const ServeOptions& o, const Storage& storage) {
  if (o.device.misc.empty()) return Status::Ok();
  const Partition* misc = storage.Find(o.device.misc);
  if (misc == nullptr) return InvalidArgument(fmt::format("--misc '{}': no such partition", o.device.misc));
  return CheckMiscPartition(*misc);
}

void PrintPartitions(Storage& storage) {
  for (const auto& p : storage.partitions()) {
    if (p.logical) {
      log::Info("logical   {:<20} {} extents     size {}", p.name, p.extents.size(), FormatBytes(p.size));
    } else {
      log::Info("partition {:<20} offset 0x{:010x} size {}", p.name, p.offset, FormatBytes(p.size));
    }
  }
}

// The logical partitions of the super, when there is one.
Status AttachSuper(const ServeOptions& o, Storage& storage, char slot) {
  storage.WatchSuper(o.super);  // a table written later may bring it
  const Partition* super = storage.Find(o.super);
  if (super == nullptr) {
    if (!o.super_given) return Status::Ok();
    return NotFound(fmt::format("--super {}: no partition of that name", o.super));
  }
  return storage.AttachSuper(o.super, slot);
}

Result<PersistentState> OpenState(const std::string& path, const ServeOptions& o) {
  StateOptions options{.initial_locked = o.initial_lock == "locked", .force_locked = !o.device.unlock_allowed};
  FP_ASSIGN_OR_RETURN(PersistentState state, PersistentState::Open(path, options));
  for (const auto& w : state.warnings()) log::Warn("{}", w);
  std::string why = state.first_start() ? " (no state file yet: --initial-lock)" : "";
  if (options.force_locked) why = " (--no-unlock)";
  log::Info("state {}: {}{}", log::Printable(path), state.Describe(), why);
  return state;
}

Result<std::unique_ptr<UsbFastboot>> StartUsb(const ServeOptions& o, FastbootDevice* device) {
  UsbServeConfig config{.ffs_dir = o.usb_ffs};
  config.gadget = {.vendor_id = o.usb_vid_pid.first, .product_id = o.usb_vid_pid.second, .serial = o.device.serialno,
                   .product = o.device.product, .udc = o.udc};
  return UsbFastboot::Start(device, config);
}

Status Serve(ServeOptions o) {
  log::Init("serve", o.verbose);
  // Signals are taken by one thread with sigwait; every other thread blocks
  // them (the storage's, the device's worker and prefault threads): blocked
  // before any starts, a signal during start-up waits for the sigwait.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  // Every flash builds a writer whose buffer pool (tens of MiB) is freed at
  // the end: keep those pages in the heap instead of unmapping them, so the
  // next flash does not fault and zero them again (costly on VMs).
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  FP_ASSIGN_OR_RETURN(auto storage, OpenStorage(o));
  FP_RETURN_IF_ERROR(CheckMisc(o, *storage));
  std::string state_path = o.state;
  if (state_path.empty()) {
    FP_ASSIGN_OR_RETURN(state_path, DefaultStatePath(o.storage.empty() ? o.specs[0].path : o.storage));
  }
  FP_ASSIGN_OR_RETURN(PersistentState state, OpenState(state_path, o));
  FP_RETURN_IF_ERROR(AttachSuper(o, *storage, state.slot()));
  PrintPartitions(*storage);
  auto device = std::make_unique<FastbootDevice>(o.device, std::move(storage), std::move(state));

  std::unique_ptr<TcpServer> tcp;
  std::unique_ptr<UdpServer> udp;
  if (!o.tcp.empty()) {
    FP_ASSIGN_OR_RETURN(tcp, TcpServer::Listen(o.tcp, device.get(), std::chrono::seconds(o.idle_timeout_s)));
    tcp->Start();
    fmt::print("serve: listening on tcp {}\n", tcp->address());
  }
  if (!o.udp.empty()) {
    FP_ASSIGN_OR_RETURN(udp, UdpServer::Bind(o.udp, device.get()));
    udp->Start();
    fmt::print("serve: listening on udp {}\n", udp->address());
  }
  std::unique_ptr<UsbFastboot> usb;
  if (o.usb) {
    FP_ASSIGN_OR_RETURN(usb, StartUsb(o, device.get()));
    std::printf("serve: serving usb (%s)\n", usb->where().c_str());
  }
  std::fflush(stdout);
  std::thread([&device, sigs] {
    int sig = 0;
    sigwait(&sigs, &sig);
    device->RequestExit();
  }).detach();
  device->WaitForExit();
  Status pending = device->WaitWrites();
  if (!pending.ok()) log::Warn("{}", pending.ToString());
  if (usb) usb->Stop();  // removes the gadget it made
  log::Info("exiting");
  std::fflush(nullptr);
  // Session threads may still hold the device: leave without destructors.
  ::_exit(pending.ok() ? 0 : 1);
}

}  // namespace

int RunServe(int argc, char** argv) {
  CLI::App app{"fastboot device daemon: the AOSP fastboot client flashes a GPT disk or named partitions "
               "over TCP, UDP and USB.\n"
               "Reading back (unlocked only): fetch:PART[:OFFSET[:SIZE]] sends a range as fastbootd does; "
               "'fastboot oem stage PART[:OFFSET[:SIZE]]' then 'fastboot get_staged FILE' (upload) fetches one with "
               "the 29.0.6 client; 'fastboot oem digest PART[:OFFSET[:SIZE]]' answers the SHA-256 of the range as "
               "it reads back now (O_DIRECT) in two INFO lines 'sha256 1/2 HEX' and 'sha256 2/2 HEX'. OFFSET and "
               "SIZE: decimal or 0x hex; getvar max-fetch-size is the largest fetch", CommandName(argv[0])};
  ServeOptions o;
  app.add_option("--storage", o.storage,
                 "block device or disk image with a GPT (a blank one starts with no partitions: 'fastboot flash "
                 "gpt LAYOUT' or 'fastboot oem format' writes a table, and the partitions are served at once)");
  app.add_option("--layout", o.layout,
                 "FILE: the layout 'fastboot oem format' writes as the GPT of --storage (an sfdisk script or a "
                 "U-Boot $partitions string, as flashpipe partition takes; 'flash gpt' also takes a GPT image). "
                 "Refused while locked, and when a partition in use would move");
  app.add_option("--partition", o.partitions,
                 std::string(kPartitionSyntax) + ", repeatable (A/B: NAME_a, NAME_b)");
  auto* super = app.add_option(
      "--super", o.super,
      "NAME of the partition holding Android dynamic partitions (liblp metadata; default super, used when "
      "present): serves its logical partitions as fastbootd does (is-logical, update-super, "
      "create/delete/resize-logical-partition) and answers is-userspace yes");
  app.add_option("--partition-type", o.partition_types,
                 "NAME=ext4|f2fs|raw, repeatable: what 'getvar partition-type:NAME' says (NAME_a and NAME_b too), "
                 "so that 'fastboot -w' and 'fastboot format' format it even when erased. Without it: ext4 for a GPT "
                 "type of Linux filesystem or Android data/cache/metadata (f2fs when it holds f2fs), else what "
                 "libblkid finds there (raw for nothing)");
  app.add_option("--tcp", o.tcp,
                 "listen for TCP clients on ADDR:PORT, or PORT on loopback (default 127.0.0.1:5554; 0.0.0.0:5554 "
                 "for every address). TCP listens unless --no-tcp, also with --udp or --usb");
  app.add_flag("--no-tcp", o.no_tcp, "do not listen for TCP clients (then give --udp or --usb)");
  app.add_option("--udp", o.udp, "listen for UDP clients on ADDR:PORT, or PORT on loopback");
  app.add_flag("--usb", o.usb, "be a USB fastboot device: a gadget made through configfs (needs libcomposite, "
               "usb_f_fs and a UDC), removed on exit");
  app.add_option("--usb-ffs", o.usb_ffs, "DIR: serve USB on this mounted FunctionFS instance instead (a gadget "
                 "the system made; bind it once DIR/ep1 exists)");
  app.add_option("--usb-id", o.usb_id, "VID:PID of the gadget (default 18d1:4ee0)");
  app.add_option("--udc", o.udc, "USB device controller for the gadget (default: the first in /sys/class/udc)");
  app.add_option("--max-download-size", o.max_download, "largest download accepted (default 256M)");
  app.add_option("--state", o.state,
                 "file keeping slot and lock state (default <storage>.fastboot-state, or "
                 "/var/lib/flashpipe/NAME.fastboot-state for a device); not in a directory everyone can write "
                 "without the sticky bit");
  app.add_option("--product", o.device.product, "getvar product");
  o.device.serialno.clear();
  app.add_option("--serialno", o.device.serialno,
                 "getvar serialno and the USB serial number (default: from /etc/machine-id)");
  app.add_option("--oem", o.oem,
                 "NAME=COMMAND: 'fastboot oem NAME ARGS' runs sh -c COMMAND with ARGS as $1.. (printable ASCII "
                 "only); refused while the device is locked");
  app.add_option("--oem-safe", o.oem_safe,
                 "NAME=COMMAND: as --oem, for a command that changes nothing: it also runs while locked");
  app.add_option("--oem-timeout", o.oem_timeout_s,
                 "seconds an oem command or hook may run before its process group is killed (default 60; its "
                 "first 4 KiB of output reach the client)");
  app.add_option("--on-reboot", o.device.on_reboot, "shell command run after reboot*/continue ($1 = target)");
  app.add_option("--on-shutdown", o.device.on_shutdown, "shell command run after shutdown");
  app.add_option("--on-set-active", o.device.on_set_active,
                 "shell command run by set_active once the slot is saved ($1 = a|b), e.g. "
                 "'fw_setenv slot_suffix _$1' for U-Boot; its output reaches the client, a non-zero exit FAILs");
  app.add_option("--on-boot", o.device.on_boot,
                 "shell command run after 'fastboot boot IMAGE' was answered ($1 = the image in a temp file, "
                 "removed when it returns), e.g. kexec. Without it, boot FAILs. Every hook and oem command gets "
                 "FLASHPIPE_HOOK, _SLOT, _SLOT_SUFFIX, _LOCKED, _CRITICAL_LOCKED, _SERIALNO, _PRODUCT in its "
                 "environment (set_active also _PREVIOUS_SLOT, and with --misc _PARTITION, _PARTITION_PATH, "
                 "_PARTITION_OFFSET, _PARTITION_SIZE; boot _IMAGE)");
  app.add_option("--misc", o.device.misc,
                 "PART: the misc partition (4 KiB at least): set_active writes the slot into its Android "
                 "bootloader_control (AOSP's layout, read by U-Boot's android_ab), current-slot and "
                 "slot-successful/-unbootable/-retry-count read it");
  app.add_option_function<std::string>(
      "--mmc",
      [&o](const std::string& path) {
        o.mmc = path;
        o.device.open_mmc = [path]() -> Result<std::unique_ptr<mmc::MmcDevice>> {
          FP_ASSIGN_OR_RETURN(auto dev, mmc::MmcIoctlDevice::Open(path, {.writable = true}));
          return std::unique_ptr<mmc::MmcDevice>(std::move(dev));
        };
      },
      "DEVICE: the eMMC (/dev/mmcblkN) that 'oem partconf:BOOT_ACK:BOOT_PARTITION[:PARTITION_ACCESS]' and "
      "'oem bootbus:WIDTH:RESET:MODE' set, as U-Boot's fastboot does (PARTITION_CONFIG [179], BOOT_BUS_CONDITIONS "
      "[177]; checked against the card, read back; refused while locked; see flashpipe mmc --help). With "
      "--storage, its boot areas are served too, as U-Boot names them: mmcNboot0 and mmcNboot1 "
      "(/dev/mmcblkNboot0, boot1), force_ro lifted for each flash or erase only");
  app.add_option("--initial-lock", o.initial_lock,
                 "locked|unlocked: the lock state of the first start, when the state file does not exist yet "
                 "(default unlocked, as development boards expect). A state file that exists but is empty, "
                 "unreadable or not understood means locked")
      ->check(CLI::IsMember({"locked", "unlocked"}));
  app.add_option("--session-timeout", o.session_timeout_s,
                 "seconds one client may hold the device, 0 = no limit (default 3600)");
  app.add_option("--min-download-rate", o.min_download_rate,
                 "a download slower than this many bytes/s (rates are SI: 64K = 64000 B/s), judged over each window after the "
                 "first, FAILs and ends the session; 0 = no floor (default 64K)");
  app.add_option("--download-rate-window", o.rate_window_s,
                 "seconds over which --min-download-rate is measured (default 10)")
      ->check(CLI::Range(1u, 3600u));
  app.add_flag("--exit-on-shutdown", o.device.exit_on_shutdown, "exit the daemon after shutdown");
  app.add_flag("--write-behind", o.device.write_behind,
               "answer flash once validated and queued; write while the next part arrives. Trade-off: "
               "OKAY no longer means written (a write error is reported by the next command), 2 buffers. "
               "A client that sends stream-flash:PART before a download (flashpipe flash) has it written while "
               "it arrives, in either mode");
  app.add_flag("--prefault", o.device.prefault,
               "fault the download buffer(s) in at start, so no flash pays page faults: the daemon then holds "
               "max-download-size (x2 with --write-behind) from the start. Default: each download's pages are "
               "faulted in on another thread just ahead of its bytes, and the buffer grows to the largest download "
               "seen (idle RSS 8 MiB instead of 280 MiB at 256M); where the CPUs are busy during a flash, a fresh "
               "daemon's first flash still pays the faults' CPU time, later ones reuse the pages");
  app.add_flag("--no-prefault", [&o](int64_t) { o.device.prefault = false; }, "the default")->group("");
  app.add_option("--critical", o.device.critical,
                 "NAME: a critical partition (NAME, NAME_a, NAME_b), repeatable: flash and erase refuse it, and "
                 "flash gpt / oem format refuse a table that moves, resizes or drops it, until "
                 "'fastboot flashing unlock_critical'");
  app.add_flag("--no-unlock", [&o](int64_t) { o.device.unlock_allowed = false; },
               "refuse 'flashing unlock' and 'unlock_critical'; the device always starts locked");
  AddWriterFlags(app, o.writer);
  app.add_option("--write-model", o.write_model,
                 "pipelined (default) | bounce:N | discard. Benchmark models: bounce:N writes like U-Boot's "
                 "sparse writer (RAW through a bounce buffer of N logical blocks, one blocking request at a time; "
                 "N was 100 before U-Boot b1aade87ca1, 16384 after); discard validates and writes nothing");
  // Older spellings, kept for scripts: not in --help.
  app.add_option("--bounce-blocks", o.bounce_blocks, "= --write-model bounce:N")->group("");
  app.add_flag("--discard-writes", o.discard_writes, "= --write-model discard")->group("");
  app.add_flag("--force", o.write.force, "open block devices even when in use");
  app.add_option("--idle-timeout", o.idle_timeout_s, "seconds a TCP client may stay silent (default 600)");
  app.add_flag("-v,--verbose", o.verbose, "log every command, download and write, with seconds since start");
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  o.super_given = super->count() > 0;
  auto writer = ParseWriterFlags(o.writer);
  if (!writer.ok()) return UsageError(app, writer.status());
  o.write.backend = writer->backend;
  o.write.queue_depth = writer->queue_depth;
  o.write.request_size = writer->request_size;
  auto model = WriteModelOf(o);
  if (!model.ok()) return UsageError(app, model.status());
  o.write.model = *model;
  if (Status st = CheckOptions(&o); !st.ok()) return UsageError(app, st);
  return ExitWith("serve", Serve(std::move(o)));
}

}  // namespace flashpipe::tools
