#include "host/fastboot_verbs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "base/fd_io.h"
#include "base/log.h"
#include "base/utf8.h"
#include "fetch/url.h"
#include "host/aosp_output.h"
#include "host/device_address.h"
#include "host/device_session.h"
#include "host/feed.h"
#include "host/product_out.h"
#include "input/image_source.h"
#include "input/remote_image.h"

namespace flashpipe::host {
namespace {

using Clock = std::chrono::steady_clock;
using PartitionFn = std::function<Status(const std::string&)>;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool HasFormatter(std::string_view type) { return type == "ext4" || type == "f2fs"; }

class Run {
 public:
  Run(const FastbootArgs& a, UsbBackend* usb, bool* usage) : a_(a), usb_(usb), usage_(usage) {}

  Status Main() {
    auto start = Clock::now();
    std::vector<std::string> args = a_.commands;
    if (args.empty() && !a_.wipe && !a_.set_active) return Usage("no command");
    if (!args.empty() && args[0] == "devices") return Devices();
    FP_RETURN_IF_ERROR(Open());
    if (!a_.slot.empty()) {
      FP_ASSIGN_OR_RETURN(slot_, VerifySlot(a_.slot, true));
    }
    std::string next_active;
    bool set_active = a_.set_active.has_value();
    if (set_active) {
      if (!a_.set_active->empty()) {
        FP_ASSIGN_OR_RETURN(next_active, VerifySlot(*a_.set_active, false));
      } else if (!slot_.empty()) {
        FP_ASSIGN_OR_RETURN(next_active, VerifySlot(slot_, false));
      } else if (auto cur = s_->client().GetVar("current-slot"); cur.ok()) {
        FP_ASSIGN_OR_RETURN(next_active, VerifySlot(*cur, false));
      } else {
        set_active = false;
      }
    }
    while (!args.empty()) FP_RETURN_IF_ERROR(Command(args));
    if (a_.wipe) FP_RETURN_IF_ERROR(Wipe());
    if (set_active) {
      FP_RETURN_IF_ERROR(Checked(
          s_->Run("set_active:" + next_active, fmt::format("Setting current slot to '{}'", next_active), out_)));
    }
    FP_RETURN_IF_ERROR(Reboot());
    std::fprintf(stderr, "Finished. Total time: %.3fs\n", Since(start));
    return Status::Ok();
  }

 private:
  Status Usage(std::string message) {
    *usage_ = true;
    return InvalidArgument(std::move(message));
  }
  static Result<std::string> Next(std::vector<std::string>& args) {
    if (args.empty()) return InvalidArgument("expected argument");
    std::string s = args.front();
    args.erase(args.begin());
    return s;
  }
  Result<std::string> Arg(std::vector<std::string>& args) {
    auto a = Next(args);
    if (!a.ok()) *usage_ = true;
    return a;
  }
  // A command whose status line said FAILED ends the run, as in the AOSP client.
  Status Checked(Status st) {
    if (st.ok()) return st;
    return out_.TakeFailed() ? Unsupported("Command failed") : st;
  }

  Status Command(std::vector<std::string>& args) {
    FP_ASSIGN_OR_RETURN(std::string cmd, Next(args));
    if (cmd == "getvar") {
      FP_ASSIGN_OR_RETURN(std::string var, Arg(args));
      return GetVar(var);
    }
    if (cmd == "erase") {
      FP_ASSIGN_OR_RETURN(std::string part, Arg(args));
      return ForPartitions(part, slot_, true, [&](const std::string& name) { return Erase(name); });
    }
    if (cmd == "flash") {
      FP_ASSIGN_OR_RETURN(std::string part, Arg(args));
      std::string file;
      if (!args.empty()) {
        file = *Next(args);
      } else {
        FP_ASSIGN_OR_RETURN(file, FindItem(part));
      }
      return ForPartitions(part, slot_, true, [&](const std::string& name) { return FlashFile(name, file); });
    }
    if (cmd == "set_active") {
      FP_ASSIGN_OR_RETURN(std::string slot, Arg(args));
      FP_ASSIGN_OR_RETURN(slot, VerifySlot(slot, false));
      return Checked(s_->Run("set_active:" + slot, fmt::format("Setting current slot to '{}'", slot), out_));
    }
    if (cmd == "reboot") {
      reboot_ = "reboot";
      if (args.size() == 1) {
        std::string what = *Next(args);
        if (what != "bootloader" && what != "recovery" && what != "fastboot") {
          return Usage(fmt::format("unknown reboot target {}", what));
        }
        reboot_ = "reboot-" + what;
      }
      if (!args.empty()) return Usage("junk after reboot command");
      return Status::Ok();
    }
    if (cmd == "reboot-bootloader" || cmd == "reboot-recovery" || cmd == "reboot-fastboot") {
      reboot_ = cmd;
      return Status::Ok();
    }
    if (cmd == "continue") return Checked(s_->Run("continue", "Resuming boot", out_));
    if (cmd == "flashall") {
      reboot_ = "reboot";
      return Flashall();
    }
    if (cmd == "flashing") {
      if (args.empty()) return Usage("missing 'flashing' command");
      static const char* kVerbs[] = {"unlock", "lock", "unlock_critical", "lock_critical", "get_unlock_ability"};
      bool known = args.size() == 1 && std::any_of(std::begin(kVerbs), std::end(kVerbs),
                                                    [&](const char* v) { return args[0] == v; });
      if (!known) return Usage(fmt::format("unknown 'flashing' command {}", args[0]));
      return Oem("flashing", args);
    }
    if (cmd == "oem") {
      if (args.empty()) return Usage("empty oem command");
      return Oem("oem", args);
    }
    return Usage(fmt::format("unknown command {}", cmd));
  }

  Status Oem(std::string command, std::vector<std::string>& args) {
    while (!args.empty()) command += " " + *Next(args);
    return Checked(s_->Run(command, "", out_));
  }

  // The AOSP client's words for a device not there yet: its TCP connect
  // failing, its UDP port closed; anything else in ours.
  static std::string ConnectError(const DeviceAddress& address, const Status& st) {
    bool refused = st.sys_errno() == ECONNREFUSED || st.message().find("port is closed") != std::string::npos;
    if (address.via == DeviceAddress::Via::kTcp && refused) {
      return fmt::format("Failed to connect to {}:{}", address.net.host, address.net.port);
    }
    if (address.via == DeviceAddress::Via::kUdp && refused) return "Connection refused";
    return st.ToString();
  }

  Status Open() {
    std::string serial = a_.serial;
    if (serial.empty()) {
      const char* env = std::getenv("ANDROID_SERIAL");
      if (env != nullptr) serial = env;
    }
    FP_ASSIGN_OR_RETURN(DeviceAddress address, ParseDeviceAddress(serial));
    TransportOptions options{.idle = a_.timeout};
    for (bool announced = false;; ) {
      auto t = ConnectDevice(address, options, usb_);
      if (t.ok()) {
        s_ = std::make_unique<DeviceSession>(std::move(*t), [this](std::string_view line) { out_.Info(line); });
        s_->set_raw_when_fits(true);  // as the AOSP client: a raw image that fits goes as it is
        if (a_.sparse_limit > 0) s_->set_max_download_override(a_.sparse_limit);
        return Status::Ok();
      }
      if (!announced) {
        if (address.via != DeviceAddress::Via::kUsb) {
          std::fprintf(stderr, "error: %s\n", TerminalText(ConnectError(address, t.status())).c_str());
        }
        std::fprintf(stderr, "< waiting for %s >\n", serial.empty() ? "any device" : TerminalText(serial).c_str());
        announced = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  Status Devices() {
    if (usb_ == nullptr) return Status::Ok();
    FP_ASSIGN_OR_RETURN(auto devices, usb_->List());
    for (const UsbDeviceInfo& d : devices) {
      std::string serial = !d.writable ? "no permissions" : d.serial.empty() ? "????????????" : d.serial;
      if (a_.long_listing) {
        std::printf("%-22s fastboot usb:%s\n", TerminalText(serial).c_str(), d.path.c_str());
      } else {
        std::printf("%s\tfastboot\n", TerminalText(serial).c_str());
      }
    }
    return Status::Ok();
  }

  Status GetVar(const std::string& var) {
    auto v = s_->client().GetVar(var);
    if (v.ok()) {
      std::fprintf(stderr, "%s: %s\n", TerminalText(var).c_str(), TerminalText(*v).c_str());
    } else {
      out_.Begin("getvar:" + var);
      out_.End(v.status());
      out_.TakeFailed();
    }
    return Status::Ok();
  }

  std::string OtherSlot(const std::string& current, int count) {
    if (count == 0 || current.empty()) return "";
    return std::string(1, static_cast<char>('a' + (current[0] - 'a' + 1) % count));
  }

  Result<std::string> VerifySlot(const std::string& slot, bool allow_all) {
    if (slot == "all") {
      if (allow_all) return slot;
      FP_ASSIGN_OR_RETURN(int count, s_->SlotCount());
      if (count > 0) return std::string("a");
      return NotFound("No known slots");
    }
    FP_ASSIGN_OR_RETURN(int count, s_->SlotCount());
    if (count == 0) return NotFound("Device does not support slots");
    if (slot == "other") {
      FP_ASSIGN_OR_RETURN(std::string cur, s_->OptionalVar("current-slot"));
      std::string other = OtherSlot(cur, count);
      if (other.empty()) return NotFound("No known slots");
      return other;
    }
    if (slot.size() == 1 && slot[0] >= 'a' && slot[0] - 'a' < count) return slot;
    std::string known;
    for (int i = 0; i < count; ++i) known += fmt::format("{}\n", static_cast<char>('a' + i));
    std::fprintf(stderr, "Slot %s does not exist. supported slots are:\n%s", slot.c_str(), known.c_str());
    return InvalidArgument(fmt::format("slot {} does not exist", slot));
  }

  // The AOSP client's do_for_partitions.
  Status ForPartitions(const std::string& part, const std::string& slot, bool force_slot, const PartitionFn& fn) {
    bool slotted = false;
    FP_ASSIGN_OR_RETURN(auto names, s_->Partitions(part, slot, &slotted));
    if (!slotted && force_slot && !slot.empty() && slot != "all") {
      std::fprintf(stderr, "Warning: %s does not support slots, and slot %s was requested.\n", part.c_str(),
                   slot.c_str());
    }
    for (const std::string& name : names) FP_RETURN_IF_ERROR(fn(name));
    return Status::Ok();
  }

  Status Erase(const std::string& name) {
    auto type = s_->client().GetVar("partition-type:" + name);
    if (type.ok() && HasFormatter(*type)) {
      std::fprintf(stderr, "******** Did you mean to fastboot format this %s partition?\n",
                   TerminalText(*type).c_str());
    }
    return Checked(s_->Run("erase:" + name, fmt::format("Erasing '{}'", name), out_));
  }

  Result<std::string> ProductDir() {
    if (!a_.product_dir.empty()) return a_.product_dir;
    const char* env = std::getenv("ANDROID_PRODUCT_OUT");
    if (env == nullptr || *env == '\0') return InvalidArgument("ANDROID_PRODUCT_OUT not set");
    return std::string(env);
  }

  Result<std::string> FindItem(const std::string& part) {
    for (const ProductImage& i : ProductImages()) {
      if (i.nickname != nullptr && part == i.nickname) {
        FP_ASSIGN_OR_RETURN(std::string dir, ProductDir());
        return dir + "/" + i.file;
      }
    }
    std::fprintf(stderr, "unknown partition '%s'\n", part.c_str());
    return InvalidArgument(fmt::format("cannot determine image filename for '{}'", part));
  }

  Status FlashFile(const std::string& name, const std::string& file) {
    ImageSpec spec{file};
    std::optional<input::FetchedImage> fetched;  // a URL's cache entry, in use until flashed
    if (fetch::IsUrl(file)) {
      auto f = input::FetchImage(file, a_.sources);
      if (!f.ok()) return f.status().WithContext(fmt::format("cannot load '{}'", fetch::DisplayUrl(file)));
      fetched = std::move(*f);
      spec = {fetched->path, fetched->bmap};
    }
    if (spec.path != "-" && !input::IsPartsSpec(spec.path) && ::access(spec.path.c_str(), R_OK) != 0) {
      return ErrnoError(fmt::format("cannot load '{}'", file));  // the AOSP client's words
    }
    auto plan = PlanImage(spec);
    if (!plan.ok()) return plan.status().WithContext(fmt::format("cannot load '{}'", file));
    Cursor cursor(Feed::Start(spec, *plan, {}, 1), 0);
    FlashStats stats;
    return Checked(s_->FlashImage(name, cursor, out_, &stats));
  }

  // A small file sent as it is ("Sending 'super' (3 KB)").
  Status DownloadFile(const std::string& label, const std::string& path) {
    FP_RETURN_IF_ERROR(input::CheckImagePathType(path));
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return ErrnoError(fmt::format("cannot open {}", path));
    std::vector<uint8_t> bytes(1 << 20);
    FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd.get(), bytes, 0, path));
    bytes.resize(n);
    out_.Begin(fmt::format("Sending '{}' ({} KB)", label, n / 1024));
    Status st = s_->client().Download(static_cast<uint32_t>(n), [&](DataOut& out) {
      std::array<std::span<const uint8_t>, 1> one{std::span<const uint8_t>(bytes)};
      return out.Send(one);
    });
    out_.End(st);
    return Checked(st);
  }

  bool Readable(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

  // Every image of the product directory before the first is sent: one
  // that is a device or a fifo (system.img -> /dev/zero) would never end.
  Status CheckImageTypes(const std::string& dir, const std::vector<ProductImage>& images) {
    for (const ProductImage& i : images) {
      FP_RETURN_IF_ERROR(input::CheckImagePathType(dir + "/" + i.file));
      FP_RETURN_IF_ERROR(input::CheckImagePathType(dir + "/" + i.signature));
    }
    return input::CheckImagePathType(dir + "/super_empty.img");
  }

  Status Flashall() {
    FP_ASSIGN_OR_RETURN(std::string dir, ProductDir());
    bool skip_secondary = a_.skip_secondary;
    if (slot_ == "all") {
      std::fprintf(stderr, "Warning: slot set to 'all'. Secondary slots will not be flashed.\n");
      skip_secondary = true;
    }
    DumpInfo();
    std::vector<ProductImage> images(ProductImages().begin(), ProductImages().end());
    FP_RETURN_IF_ERROR(CheckImageTypes(dir, images));
    FP_RETURN_IF_ERROR(CheckRequirements(dir, &images));
    FP_ASSIGN_OR_RETURN(int slots, s_->SlotCount());
    bool ab = slots >= 2;
    std::string active = slot_ == "all" ? "a" : slot_;
    if (ab) {
      if (active.empty()) {
        FP_ASSIGN_OR_RETURN(active, s_->OptionalVar("current-slot"));
      }
      if (!active.empty()) {
        FP_RETURN_IF_ERROR(
            Checked(s_->Run("set_active:" + active, fmt::format("Setting current slot to '{}'", active), out_)));
      }
    }
    std::string secondary;
    if (!skip_secondary) {
      std::string base = slot_;
      if (slot_.empty() || slot_ == "all") {
        FP_ASSIGN_OR_RETURN(base, s_->OptionalVar("current-slot"));
      }
      secondary = OtherSlot(base, slots);
      if (secondary.empty()) {
        if (ab) std::fprintf(stderr, "Warning: Could not determine slot for secondary images. Ignoring.\n");
        skip_secondary = true;
      }
    }
    std::vector<std::pair<const ProductImage*, std::string>> boot, os;
    for (const ProductImage& i : images) {
      std::string slot = slot_;
      if (i.secondary()) {
        if (skip_secondary) continue;
        slot = secondary;
      }
      if (i.role == ImageRole::kBootCritical) boot.emplace_back(&i, slot);
      if (i.role == ImageRole::kNormal) os.emplace_back(&i, slot);
    }
    auto status = s_->client().GetVar("snapshot-update-status");
    if (status.ok() && *status != "none") {
      FP_RETURN_IF_ERROR(Checked(s_->Run("snapshot-update:cancel", "Snapshot cancel", out_)));
    }
    FP_RETURN_IF_ERROR(FlashImages(dir, boot));
    FP_RETURN_IF_ERROR(UpdateSuper(dir));
    for (const auto& [image, slot] : os) {
      FP_RETURN_IF_ERROR(ForPartitions(image->partition, slot, false, [&](const std::string& name) -> Status {
        FP_ASSIGN_OR_RETURN(bool logical, s_->IsLogical(name));
        if (!logical) return Status::Ok();
        return Checked(
            s_->Run(fmt::format("resize-logical-partition:{}:0", name), fmt::format("Resizing '{}'", name), out_));
      }));
    }
    return FlashImages(dir, os);
  }

  void DumpInfo() {
    std::fprintf(stderr, "--------------------------------------------\n");
    const std::pair<const char*, const char*> kVars[] = {{"Bootloader Version...", "version-bootloader"},
                                                         {"Baseband Version.....", "version-baseband"},
                                                         {"Serial Number........", "serialno"}};
    for (auto [label, var] : kVars) {
      auto v = s_->client().GetVar(var);
      if (v.ok()) {
        std::fprintf(stderr, "%s: %s\n", label, TerminalText(*v).c_str());
      } else {
        out_.Begin(std::string("getvar:") + var);
        out_.End(v.status());
        out_.TakeFailed();
      }
    }
    std::fprintf(stderr, "--------------------------------------------\n");
  }

  Status CheckRequirements(const std::string& dir, std::vector<ProductImage>* images) {
    UniqueFd fd(::open((dir + "/android-info.txt").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return NotFound("could not read android-info.txt");
    std::vector<uint8_t> buf((64 << 10) + 1);
    FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd.get(), buf, 0, "android-info.txt"));
    if (n == buf.size()) return InvalidArgument(fmt::format("android-info.txt: larger than {} bytes", buf.size() - 1));
    std::string text(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
    auto product = s_->client().GetVar("product");
    if (!product.ok()) {
      std::fprintf(stderr, "getvar:product FAILED (%s)\n", TerminalText(AospOutput::Reason(product.status())).c_str());
    }
    std::string cur = product.ok() ? *product : "";
    for (size_t start = 0; start < text.size();) {
      size_t nl = text.find('\n', start);
      size_t at = start;
      std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      start = nl == std::string::npos ? text.size() : nl + 1;
      if (line.empty()) continue;
      // A requirement too long to be one is refused, never skipped: skipping
      // a "require board=" line would flash a board the images are not for.
      if (line.size() > kMaxRequirementLine) {
        return InvalidArgument(fmt::format("android-info.txt: a line of {} bytes at offset {} (at most {}): {}",
                                           line.size(), at, kMaxRequirementLine,
                                           log::Printable(line, 64)));
      }
      auto r = ParseRequirement(line);
      if (!r) {
        std::fprintf(stderr, "android-info.txt syntax error: %s\n", log::Printable(line).c_str());
        continue;
      }
      if (r->name == "partition-exists") {
        FP_RETURN_IF_ERROR(PartitionExists(r->options[0], images));
      } else {
        FP_RETURN_IF_ERROR(CheckRequirement(cur, *r));
      }
    }
    return Status::Ok();
  }

  Status PartitionExists(const std::string& part, std::vector<ProductImage>* images) {
    auto has = s_->client().GetVar("has-slot:" + part);
    if (!has.ok() || (*has != "yes" && *has != "no")) {
      return NotFound(fmt::format("device doesn't have required partition {}!", part));
    }
    bool known = false;
    for (ProductImage& i : *images) {
      if (i.nickname != nullptr && part == i.nickname) {
        i.optional = false;
        known = true;
      }
    }
    if (!known) {
      return NotFound(fmt::format("device requires partition {} which is not known to this version of fastboot", part));
    }
    return Status::Ok();
  }

  Status CheckRequirement(const std::string& cur_product, const Requirement& r) {
    std::fprintf(stderr, "%-50s ", TerminalText("Checking '" + r.name + "'").c_str());
    auto start = Clock::now();
    if (!r.product.empty() && r.product != cur_product) {
      std::fprintf(stderr, "IGNORE, product is %s required only for %s [%7.3fs]\n", TerminalText(cur_product).c_str(),
                   TerminalText(r.product).c_str(), Since(start));
      return Status::Ok();
    }
    auto value = s_->client().GetVar(r.name);
    if (!value.ok()) {
      std::fprintf(stderr, "FAILED\n\nCould not getvar for '%s' (%s)\n\n", TerminalText(r.name).c_str(),
                   TerminalText(AospOutput::Reason(value.status())).c_str());
      return InvalidArgument("requirements not met!");
    }
    if (RequirementMet(r, *value)) {
      std::fprintf(stderr, "OKAY [%7.3fs]\n", Since(start));
      return Status::Ok();
    }
    std::string options = fmt::format("'{}'", r.options[0]);
    for (size_t i = 1; i < r.options.size(); ++i) options += fmt::format(" or '{}'", r.options[i]);
    std::fprintf(stderr, "FAILED\n\nDevice %s is '%s'.\nUpdate %s %s.\n\n", TerminalText(r.name).c_str(),
                 TerminalText(*value).c_str(), r.reject ? "rejects" : "requires", TerminalText(options).c_str());
    return InvalidArgument("requirements not met!");
  }

  Status FlashImages(const std::string& dir, const std::vector<std::pair<const ProductImage*, std::string>>& list) {
    for (const auto& [image, slot] : list) {
      std::string path = dir + "/" + image->file;
      if (!Readable(path)) {
        if (image->optional) continue;
        return ErrnoError(fmt::format("could not load '{}'", image->file));
      }
      std::string sig = dir + "/" + image->signature;
      FP_RETURN_IF_ERROR(ForPartitions(image->partition, slot, false, [&](const std::string& name) -> Status {
        if (Readable(sig)) {
          FP_RETURN_IF_ERROR(DownloadFile("signature", sig));
          FP_RETURN_IF_ERROR(Checked(s_->Run("signature", "installing signature", out_)));
        }
        return FlashFile(name, path);
      }));
    }
    return Status::Ok();
  }

  Status UpdateSuper(const std::string& dir) {
    std::string path = dir + "/super_empty.img";
    if (!Readable(path)) return Status::Ok();
    auto userspace = s_->client().GetVar("is-userspace");
    if (!userspace.ok() || *userspace != "yes") FP_RETURN_IF_ERROR(RebootToUserspace());
    auto name = s_->client().GetVar("super-partition-name");
    std::string super = name.ok() ? *name : "super";
    FP_RETURN_IF_ERROR(DownloadFile(super, path));
    std::string command = "update-super:" + super + (a_.wipe ? ":wipe" : "");
    return Checked(s_->Run(command, "Updating super partition", out_));
  }

  Status RebootToUserspace() {
    FP_RETURN_IF_ERROR(Checked(s_->Run("reboot-fastboot", "Rebooting into fastboot", out_)));
    s_.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    FP_RETURN_IF_ERROR(Open());
    auto v = s_->client().GetVar("is-userspace");
    if (!v.ok() || *v != "yes") {
      return Unsupported("Failed to boot into userspace fastboot; one or more components might be unbootable.");
    }
    return Status::Ok();
  }

  Status Wipe() {
    for (const char* part : {"userdata", "cache", "metadata"}) {
      auto type = s_->client().GetVar(std::string("partition-type:") + part);
      if (!type.ok() || type->empty()) continue;
      FP_RETURN_IF_ERROR(Checked(s_->Run(std::string("erase:") + part, fmt::format("Erasing '{}'", part), out_)));
      // Formatting needs a file system maker; none is run here (see the README).
      auto size = s_->client().GetVar(std::string("partition-size:") + part);
      std::fprintf(stderr, "Erase successful, but not automatically formatting.\n");
      if (!size.ok()) {
        std::fprintf(stderr, "Unable to get partition size\nFAILED (%s)\n",
                     TerminalText(AospOutput::Reason(size.status())).c_str());
        continue;
      }
      std::fprintf(stderr, "File system type %s not supported.\n", TerminalText(*type).c_str());
    }
    return Status::Ok();
  }

  Status Reboot() {
    if (reboot_ == "reboot") {
      if (a_.skip_reboot) return Status::Ok();
      return Checked(s_->Run("reboot", "Rebooting", out_));
    }
    if (reboot_ == "reboot-bootloader") return Checked(s_->Run(reboot_, "Rebooting into bootloader", out_));
    if (reboot_ == "reboot-recovery") return Checked(s_->Run(reboot_, "Rebooting into recovery", out_));
    if (reboot_ == "reboot-fastboot") return RebootToUserspace();
    return Status::Ok();
  }

  const FastbootArgs& a_;
  UsbBackend* usb_;
  bool* usage_;
  AospOutput out_{stderr};
  std::unique_ptr<DeviceSession> s_;
  std::string slot_;
  std::string reboot_;
};

}  // namespace

Status RunFastboot(const FastbootArgs& args, UsbBackend* usb, bool* usage) {
  *usage = false;
  return Run(args, usb, usage).Main();
}

}  // namespace flashpipe::host
