#include "fastboot/session.h"

#include <algorithm>

#include "base/log.h"
#include "base/units.h"
#include "fastboot/hooks.h"
#include "fastboot/misc_slot.h"
#include "fastboot/readback.h"
#include "fastboot/reason_text.h"
#include "mmc/boot_area.h"
#include "wire/protocol.h"

namespace flashpipe::fastboot {
namespace {

using Clock = std::chrono::steady_clock;
using wire::Data;
using wire::Fail;
using wire::Hex32;
using wire::Hex64;
using wire::Info;
using wire::kMaxCommand;
using wire::kMaxMessage;
using wire::Okay;
using wire::ParseCommand;
using wire::ParseDownloadSize;

// Output of an oem command sent to the client as INFO lines; the rest is
// counted and dropped.
constexpr size_t kOemOutputLimit = 4096;

// Short enough that "flashing unlock_critical: ..." fits a FAIL whole.
Status Locked(std::string_view what) {
  return InvalidArgument(fmt::format("{}: locked (fastboot flashing unlock)", what));
}

// "boot_a" -> "boot"; "" when the name has no slot suffix.
std::string_view SlotBase(std::string_view name) {
  if (name.size() > 2 && name[name.size() - 2] == '_' &&
      (name.back() == 'a' || name.back() == 'b')) {
    return name.substr(0, name.size() - 2);
  }
  return {};
}

std::vector<std::string> SplitWords(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// "digest:boot:0:4096" or "digest boot 0 4096" -> "boot:0:4096" for the
// built-in oem command `name`; "" when `arg` is not that command.
std::string BuiltinOemArgument(std::string_view arg, std::string_view name) {
  if (!arg.starts_with(name) || arg.size() == name.size()) return {};
  if (arg[name.size()] != ':' && arg[name.size()] != ' ') return {};
  std::string range(arg.substr(name.size() + 1));
  std::replace(range.begin(), range.end(), ' ', ':');
  return range;
}

}  // namespace

const Session::CommandSpec Session::kCommands[] = {
    // name, handler, while locked, waits_for_writes, takes_argument
    {"getvar", &Session::DoGetvar, kAllowed, true, true},
    {"download", &Session::DoDownload, kRefused, false, true},  // as fastbootd
    {"flash", &Session::DoFlash, kRefused, false, true},  // Flash() waits for the previous part itself
    // flashpipe's own: the next download is written to PART as it arrives.
    {"stream-flash", &Session::DoStreamFlash, kRefused, false, true},
    {"erase", &Session::DoErase, kRefused, true, true},
    {"set_active", &Session::DoSetActive, kRefused, true, true},
    {"flashing", &Session::DoFlashing, kHandlerDecides, true, true},  // unlock_critical is refused
    {"reboot", &Session::DoReboot, kAllowed, true, true},
    {"reboot-bootloader", &Session::DoRebootBootloader, kAllowed, true, false},
    {"reboot-fastboot", &Session::DoRebootFastboot, kAllowed, true, false},
    {"reboot-recovery", &Session::DoRebootRecovery, kAllowed, true, false},
    {"continue", &Session::DoContinue, kAllowed, true, false},
    {"shutdown", &Session::DoShutdown, kAllowed, true, false},
    {"boot", &Session::DoBoot, kRefused, true, false},
    {"oem", &Session::DoOem, kHandlerDecides, true, true},  // only --oem-safe commands
    // Metadata changes wait for write-behind flashes: space they free may be
    // handed to another partition at once.
    {"update-super", &Session::DoUpdateSuper, kRefused, true, true},
    {"create-logical-partition", &Session::DoCreateLogical, kRefused, true, true},
    {"delete-logical-partition", &Session::DoDeleteLogical, kRefused, true, true},
    {"resize-logical-partition", &Session::DoResizeLogical, kRefused, true, true},
    {"fetch", &Session::DoFetch, kRefused, true, true},      // as fastbootd
    {"upload", &Session::DoUpload, kRefused, true, false},
};

// Checked before the --oem commands; each refuses to run while locked.
const Session::BuiltinOem Session::kBuiltinOems[] = {
    {"stage", &Session::DoOemStage},
    {"digest", &Session::DoOemDigest},
    {"format", &Session::DoOemFormat},  // session_table.cc
    {"partconf", &Session::DoOemPartconf},
    {"bootbus", &Session::DoOemBootbus},
};

const Session::VarSpec Session::kVars[] = {
    {"version", &Session::VarVersion, kDevice},
    {"version-bootloader", &Session::VarVersionBootloader, kDevice},
    {"version-baseband", &Session::VarVersionBaseband, kDevice},
    {"product", &Session::VarProduct, kDevice},
    {"serialno", &Session::VarSerialno, kDevice},
    {"max-download-size", &Session::VarMaxDownloadSize, kDevice},
    {"current-slot", &Session::VarCurrentSlot, kDevice},
    {"slot-count", &Session::VarSlotCount, kDevice},
    {"is-userspace", &Session::VarIsUserspace, kDevice},
    {"secure", &Session::VarSecure, kDevice},
    {"unlocked", &Session::VarUnlocked, kDevice},
    {"logical-block-size", &Session::VarLogicalBlockSize, kDevice},
    {"erase-block-size", &Session::VarEraseBlockSize, kDevice},
    {"partition-size", &Session::VarPartitionSize, kPartition},
    {"partition-type", &Session::VarPartitionType, kPartition},
    {"has-slot", &Session::VarHasSlot, kPartition},
    {"is-logical", &Session::VarIsLogical, kPartition},
    {"slot-successful", &Session::VarSlotSuccessful, kSlot},
    {"slot-unbootable", &Session::VarSlotUnbootable, kSlot},
    {"slot-retry-count", &Session::VarSlotRetryCount, kSlot},
    {"super-partition-name", &Session::VarSuperPartitionName, kDevice},
    {"max-fetch-size", &Session::VarMaxFetchSize, kDevice},
    {"stream-flash", &Session::VarStreamFlash, kDevice},
};

Session::Session(FastbootDevice* device, Connection* transport) : device_(device), transport_(transport) {}

Status Session::Run() {
  device_->ForgetDownload();
  auto limit = device_->config().limits.session_timeout;
  if (limit.count() > 0) deadline_ = Clock::now() + limit;
  while (after_ == After::kContinue) {
    transport_->set_deadline(deadline_);
    auto wire = transport_->ReadCommand(kMaxCommand);
    if (!wire.ok()) {
      const Status& st = wire.status();
      if (st.code() == Code::kCancelled) return Status::Ok();
      if (st.code() == Code::kTimedOut) return Expired();  // between commands: nobody waits for a FAIL
      FP_RETURN_IF_ERROR(Reply(st));
      if (st.code() != Code::kInvalidArgument) return st;  // framing lost
      continue;
    }
    log::Debug("{}: {}", transport_->peer(), log::Printable(*wire));
    Status st = Dispatch(*wire);
    if (!st.ok()) return st.code() == Code::kCancelled ? Status::Ok() : st;
  }
  RunAfterHooks();
  return end_status_;
}

Status Session::Expired() const {
  return TimedOut(fmt::format("session time limit of {} s reached", device_->config().limits.session_timeout.count()));
}

// The handler's answer when a time limit ends the session: a FAIL, then the end.
Result<std::string> Session::EndSession(Status why) {
  after_ = After::kEndSession;
  end_status_ = why;
  return why;
}

void Session::RunAfterHooks() {
  const DeviceConfig& config = device_->config();
  auto run = [&](const std::string& command, const std::string& name, std::vector<std::string> args,
                 HookContext context) {
    if (command.empty()) return;
    auto log_line = [&](std::string_view line) { log::Debug("{} hook: {}", name, log::Printable(line)); };
    auto r = RunHook(command, name, args, {.timeout = config.hook_timeout}, log_line, HookEnvironment(context));
    if (!r.ok()) log::Warn("{} hook: {}", name, r.status().ToString());
    if (r.ok() && r->timed_out) log::Warn("{} hook killed after {} ms", name, config.hook_timeout.count());
    if (r.ok() && !r->timed_out && r->exit_status != 0) log::Warn("{} hook: exit status {}", name, r->exit_status);
  };
  if (after_ == After::kReboot) run(config.on_reboot, "reboot", {reboot_target_}, HookState("reboot"));
  if (after_ == After::kShutdown) {
    run(config.on_shutdown, "shutdown", {}, HookState("shutdown"));
    if (config.exit_on_shutdown) device_->RequestExit();
  }
  if (after_ == After::kBoot) {
    HookContext context = HookState("boot");
    context.extra.push_back("FLASHPIPE_IMAGE=" + boot_image_);
    run(config.on_boot, "boot", {boot_image_}, context);
    ::unlink(boot_image_.c_str());  // a kexec that worked never comes back here
  }
}

Status Session::Dispatch(std::string_view wire) {
  auto cmd = ParseCommand(wire);
  if (!cmd.ok()) return Reply(cmd.status());
  for (const auto& spec : kCommands) {
    if (spec.name != cmd->name) continue;
    Status pending = spec.waits_for_writes ? device_->WaitWritesAndSuper() : device_->TakeWriteError();
    if (!pending.ok()) return Reply(pending);
    if (spec.when_locked == kRefused && device_->state().locked()) return Reply(Locked(spec.name));
    if (!spec.takes_argument && !cmd->arg.empty()) {
      return Reply(InvalidArgument(fmt::format("{} takes no argument", spec.name)));
    }
    Result<std::string> r = (this->*spec.handler)(cmd->arg);
    if (!transport_error_.ok()) return transport_error_;
    return Reply(r);
  }
  return Reply(InvalidArgument(fmt::format("unknown command '{}'", cmd->name.substr(0, 40))));
}

Status Session::Reply(const Result<std::string>& result) {
  if (result.ok()) return transport_->Send(Okay(*result));
  std::string reason = result.status().ToString();
  if (reason.size() > kMaxMessage) {
    log::Info("{}: FAIL {}", transport_->peer(), log::Printable(reason, 1024));
  } else {
    log::Debug("{}: FAIL {}", transport_->peer(), log::Printable(reason));
  }
  if (reason.size() > kMaxMessage) {
    for (const auto& line : WrapWords(reason, kMaxMessage)) FP_RETURN_IF_ERROR(transport_->Send(Info(line)));
  }
  return transport_->Send(Fail(ShortReason(reason, kMaxMessage)));
}

Status Session::SendInfo(std::string_view message) {
  Status st = transport_->Send(Info(message));
  if (!st.ok() && transport_error_.ok()) transport_error_ = st;
  return st;
}

bool Session::HasSlots() const {
  for (const auto& p : device_->storage().partitions()) {
    if (!SlotBase(p.name).empty()) return true;
  }
  return false;
}

HookContext Session::HookState(std::string_view hook) {
  const DeviceConfig& config = device_->config();
  const PersistentState& state = device_->state();
  HookContext c{.hook = hook, .serialno = config.serialno, .product = config.product,
                .slot = HasSlots() ? ActiveSlot() : '\0', .locked = state.locked(),
                .critical_locked = state.critical_locked()};
  return c;
}

const Partition* Session::Misc() const {
  const std::string& name = device_->config().misc;
  return name.empty() ? nullptr : device_->storage().Find(name);
}

Result<BootControlBytes> Session::BootControl() {
  const Partition* misc = Misc();
  if (misc == nullptr) return Unsupported("no misc partition (serve --misc PART)");
  auto block = ReadBootControl(device_->storage(), *misc);
  if (block.ok() || block.status().code() != Code::kNotFound) return block;
  return DefaultBootControl(2, static_cast<unsigned>(device_->state().slot() - 'a'));
}

Result<SlotMetadata> Session::MiscSlot(std::string_view slot) {
  if (slot.size() == 2 && slot[0] == '_') slot.remove_prefix(1);
  if (slot != "a" && slot != "b") return InvalidArgument(fmt::format("slot '{}' is not a or b", slot.substr(0, 20)));
  FP_ASSIGN_OR_RETURN(BootControlBytes block, BootControl());
  return GetSlot(block, static_cast<unsigned>(slot[0] - 'a'));
}

char Session::ActiveSlot() {
  char slot = device_->state().slot();
  if (Misc() == nullptr) return slot;
  auto block = BootControl();
  if (!block.ok()) {
    log::Warn("current-slot: {}; answering the state file's slot", block.status().ToString());
    return slot;
  }
  int next = NextBootSlot(*block, static_cast<unsigned>(slot - 'a'));
  return next < 0 ? slot : static_cast<char>('a' + next);
}

namespace {

// "mmcblk0boot1" (the kernel's node) -> "mmc0boot1" (U-Boot's name, as
// serve --mmc serves the boot areas); "" for any other name.
std::string BootAreaAlias(std::string_view name) {
  auto area = mmc::ParseBootAreaName(name);
  if (!area) return {};
  return fmt::format("mmc{}boot{}", std::string_view(area->card).substr(6), area->index);
}

}  // namespace

// A partition by its name, or by its base name plus the current slot; an
// eMMC boot area also by its kernel name (BootAreaAlias).
Result<const Partition*> Session::Resolve(const std::string& name) {
  if (name.empty()) return InvalidArgument("missing partition name");
  if (const Partition* p = device_->storage().Find(name)) return p;
  if (std::string alias = BootAreaAlias(name); !alias.empty()) {
    if (const Partition* p = device_->storage().Find(alias)) return p;
  }
  std::string slotted = fmt::format("{}_{}", name, device_->state().slot());
  if (const Partition* p = device_->storage().Find(slotted)) return p;
  return NotFound(fmt::format("partition '{}' not found", name.substr(0, 40)));
}

// A partition to be written: not a critical one while those are locked.
Result<const Partition*> Session::ResolveWritable(const std::string& name) {
  FP_ASSIGN_OR_RETURN(const Partition* p, Resolve(name));
  if (device_->state().critical_locked() && device_->IsCritical(p->name)) {
    return InvalidArgument(fmt::format("critical partition '{}': flashing unlock_critical", p->name));
  }
  // A logical partition lies inside the super: a critical super covers it.
  if (const DynamicPartitions* d = device_->storage().dynamic(); d != nullptr && p->logical) {
    if (device_->state().critical_locked() && device_->IsCritical(d->super().name)) {
      return InvalidArgument(fmt::format("critical partition '{}': flashing unlock_critical", d->super().name));
    }
  }
  return p;
}

// --- commands ---------------------------------------------------------------

Result<std::string> Session::DoGetvar(const std::string& arg) {
  if (arg == "all") return DoGetvarAll();
  for (const auto& var : kVars) {
    if (var.scope != kDevice) {
      if (arg.size() > var.name.size() && arg.compare(0, var.name.size(), var.name) == 0 &&
          arg[var.name.size()] == ':') {
        return (this->*var.get)(std::string_view(arg).substr(var.name.size() + 1));
      }
    } else if (arg == var.name) {
      return (this->*var.get)({});
    }
  }
  return NotFound(fmt::format("unknown variable '{}'", arg.substr(0, 40)));
}

Result<std::string> Session::DoGetvarAll() {
  std::vector<std::string> bases;  // has-slot is asked by base name ("boot")
  for (const auto& p : device_->storage().partitions()) {
    std::string base(SlotBase(p.name).empty() ? std::string_view(p.name) : SlotBase(p.name));
    if (std::find(bases.begin(), bases.end(), base) == bases.end()) bases.push_back(base);
  }
  std::vector<std::string> names;
  for (const auto& p : device_->storage().partitions()) names.push_back(p.name);
  std::vector<std::string> slots;
  if (HasSlots() && Misc() != nullptr) slots = {"a", "b"};
  for (const auto& var : kVars) {
    if (var.scope != kDevice) {
      bool by_base = var.get == &Session::VarHasSlot;
      for (const auto& name : var.scope == kSlot ? slots : by_base ? bases : names) {
        auto v = (this->*var.get)(name);
        std::string line = v.ok() ? fmt::format("{}:{}:{}", var.name, name, *v) : std::string();
        if (line.size() > kMaxMessage && v->starts_with("0x")) {
          // A 36-character GPT name leaves no room for 16 hex digits: drop the leading zeros.
          size_t nz = v->find_first_not_of('0', 2);
          line = fmt::format("{}:{}:0x{}", var.name, name, nz == std::string::npos ? "0" : v->substr(nz));
        }
        if (v.ok() && SendInfo(line).ok()) continue;
        if (!transport_error_.ok()) return transport_error_;
      }
    } else if (auto v = (this->*var.get)({}); v.ok()) {
      if (!SendInfo(fmt::format("{}:{}", var.name, *v)).ok()) return transport_error_;
    }
  }
  return std::string();
}

Result<std::string> Session::DoStreamFlash(const std::string& arg) {
  // As flash: the metadata a queued super write changes is read first.
  if (device_->super_unsettled() && arg != device_->storage().dynamic()->super().name) {
    FP_RETURN_IF_ERROR(device_->WaitWritesAndSuper());
  }
  FP_ASSIGN_OR_RETURN(const Partition* p, ResolveWritable(arg));
  stream_to_ = p->name;
  return std::string();
}

Result<std::string> Session::DoDownload(const std::string& arg) {
  // A download that fails, even one refused before a byte came, drops the
  // one before it: a later flash must never write the previous image.
  device_->AbortDownload();
  // stream-flash names the next download only, whatever becomes of it.
  std::optional<std::string> stream_name = std::exchange(stream_to_, std::nullopt);
  FP_ASSIGN_OR_RETURN(uint32_t size, ParseDownloadSize(arg));
  uint32_t limit = device_->config().max_download_size;
  if (size > limit) {
    return InvalidArgument(fmt::format("download of {} bytes > max-download-size {}", size, limit));
  }
  const Partition* stream_to = nullptr;
  if (stream_name) {
    // Looked up again: a command between them may have changed the partitions.
    FP_ASSIGN_OR_RETURN(stream_to, ResolveWritable(*stream_name));
    if (!device_->storage().IsSuper(*stream_to) && device_->super_unsettled()) {
      FP_RETURN_IF_ERROR(device_->WaitWritesAndSuper());
      FP_ASSIGN_OR_RETURN(stream_to, ResolveWritable(*stream_name));
    }
  }
  FP_RETURN_IF_ERROR(device_->BeginDownload(size, stream_to));
  if (Status st = transport_->Send(Data(size)); !st.ok()) {
    device_->AbortDownload(st);
    transport_error_ = st;
    return st;
  }
  RateFloor floor(device_->config().limits, Clock::now());
  DownloadTarget& target = device_->download_target();
  for (;;) {
    auto now = Clock::now();
    Status over = now >= deadline_ ? Expired() : floor.Check(target.received(), now);
    if (!over.ok()) {
      uint64_t at = target.received();
      over = over.WithContext(fmt::format("download at byte {} of {}", at, size));
      device_->AbortDownload(over);
      return EndSession(over);
    }
    transport_->set_deadline(std::min(deadline_, floor.next_check()));
    Status st = transport_->ReceiveDownload(target);
    if (st.ok()) break;
    if (st.code() == Code::kTimedOut) continue;  // a limit to check, above
    st = st.WithContext(fmt::format("download at byte {} of {}", device_->download_received(), size));
    device_->AbortDownload(st);
    // Malformed data (USB: more than announced) leaves the link usable: FAIL it.
    if (st.code() != Code::kInvalidArgument) transport_error_ = st;
    return st;
  }
  device_->EndDownload();
  return std::string();
}

Result<std::string> Session::DoFlash(const std::string& arg) {
  // U-Boot's pseudo-partition, unless the table has a partition of that name.
  if (arg == "gpt" && device_->storage().Find(arg) == nullptr) return DoFlashGpt();
  // The parts of a super image follow each other without waiting; any other
  // partition is looked up in the metadata they wrote.
  if (device_->super_unsettled() && arg != device_->storage().dynamic()->super().name) {
    FP_RETURN_IF_ERROR(device_->WaitWritesAndSuper());
  }
  FP_ASSIGN_OR_RETURN(const Partition* p, ResolveWritable(arg));
  auto last = Clock::now();
  ProgressFn progress = [&](uint64_t done, uint64_t total) {
    auto now = Clock::now();
    if (now - last < std::chrono::seconds(1) || total == 0) return;
    last = now;
    (void)SendInfo(fmt::format("writing '{}' {}% ({})", p->name, done * 100 / total, FormatBytes(done)));
  };
  bool queued = false;
  Status st = device_->Flash(*p, progress, &queued);
  if (!st.ok()) return st;
  if (queued) return std::string("queued (write-behind)");
  // A whole disk (--partition disk=/dev/X) may now carry a new table.
  // The image is written and synced either way: a kernel that could not
  // be told is said, not turned into a FAIL of the write.
  auto kernel = device_->storage().TellKernelAfterWholeDiskFlash(*p);
  std::string said;
  if (!kernel.ok()) {
    said = "written; the kernel still has the old partitions: " + kernel.status().ToString();
    log::Warn("{}: '{}': {}", transport_->peer(), p->name, said);
  } else if (*kernel) {
    said = (*kernel)->Describe();
    log::Info("{}: '{}' holds a GPT: {}", transport_->peer(), p->name, said);
  }
  for (const auto& piece : WrapWords(said, kMaxMessage)) {
    if (!SendInfo(piece).ok()) return transport_error_;
  }
  return std::string();
}

Result<std::string> Session::DoErase(const std::string& arg) {
  FP_ASSIGN_OR_RETURN(const Partition* p, ResolveWritable(arg));
  FP_RETURN_IF_ERROR(device_->Erase(*p));
  return std::string();
}

// Misc first (what the bootloader reads), then the state file, then the
// hook, which sees the slot already saved.
Result<std::string> Session::DoSetActive(const std::string& arg) {
  std::string_view slot = arg;
  if (slot.size() == 2 && slot[0] == '_') slot.remove_prefix(1);
  if (slot != "a" && slot != "b") return InvalidArgument(fmt::format("slot '{}' is not a or b", arg.substr(0, 20)));
  if (!HasSlots()) return Unsupported("device has no A/B partitions");
  char previous = ActiveSlot();
  const Partition* misc = Misc();
  if (misc != nullptr) FP_RETURN_IF_ERROR(WriteActiveSlot(device_->storage(), *misc, slot[0], previous));
  FP_RETURN_IF_ERROR(device_->state().SetSlot(slot[0]));
  if (DynamicPartitions* d = device_->storage().dynamic()) d->SelectSlot(slot[0]);
  log::Info("{}: set_active {} (was {}){}", transport_->peer(), slot, previous,
            misc != nullptr ? fmt::format(", misc '{}' written", misc->name) : "");
  const std::string& hook = device_->config().on_set_active;
  if (hook.empty()) return std::string();
  HookContext context = HookState("set-active");
  context.partition = misc;
  if (misc != nullptr) context.partition_path = device_->storage().path(*misc);
  context.extra.push_back(fmt::format("FLASHPIPE_PREVIOUS_SLOT={}", previous));
  return RunClientHook(hook, "set_active hook", "set-active", {std::string(slot)}, HookEnvironment(context));
}

Result<std::string> Session::DoFlashing(const std::string& arg) {
  struct LockOp {
    const char* arg;
    Status (PersistentState::*set)(bool);
    bool locked;
    bool refused_while_locked;
  };
  static const LockOp kLockOps[] = {
      {"lock", &PersistentState::SetLocked, true, false},
      {"unlock", &PersistentState::SetLocked, false, false},
      {"lock_critical", &PersistentState::SetCriticalLocked, true, false},
      {"unlock_critical", &PersistentState::SetCriticalLocked, false, true},
  };
  for (const auto& op : kLockOps) {
    if (arg != op.arg) continue;
    if (op.refused_while_locked && device_->state().locked()) return Locked(fmt::format("flashing {}", op.arg));
    if (!op.locked && !device_->config().unlock_allowed) return Unsupported("unlocking is not allowed on this device");
    if (Status st = (device_->state().*op.set)(op.locked); !st.ok()) {
      // A lock that could not be saved still holds; the client is told.
      log::Warn("flashing {}: {}", op.arg, st.ToString());
      return st.WithContext(fmt::format("flashing {}", op.arg));
    }
    const PersistentState& state = device_->state();
    log::Info("{}: flashing {}: {}", transport_->peer(), op.arg, state.Describe());
    // The client prints it as "(bootloader) device now locked, ...".
    if (!SendInfo(fmt::format("device now {}, critical partitions {}", state.locked() ? "locked" : "unlocked",
                              state.critical_locked() ? "locked" : "unlocked"))
             .ok()) {
      return transport_error_;
    }
    return std::string();
  }
  if (arg == "get_unlock_ability") {
    if (!SendInfo(fmt::format("get_unlock_ability: {}", device_->config().unlock_allowed ? 1 : 0)).ok()) {
      return transport_error_;
    }
    return std::string();
  }
  return Unsupported(fmt::format("flashing {}: not supported", arg.substr(0, 30)));
}

Result<std::string> Session::RebootTo(std::string target) {
  after_ = After::kReboot;
  // The daemon stays up: after reboot-fastboot it answers as fastbootd does
  // (is-userspace: yes), which the client checks when it reconnects; any
  // other reboot brings back the bootloader-level fastboot.
  device_->set_userspace(target == "fastboot");
  reboot_target_ = std::move(target);
  return std::string();
}

// "reboot:bootloader" from newer clients; only the protocol's targets.
Result<std::string> Session::DoReboot(const std::string& arg) {
  static constexpr std::string_view kTargets[] = {"bootloader", "fastboot", "recovery"};
  if (arg.empty()) return RebootTo("system");
  if (std::find(std::begin(kTargets), std::end(kTargets), arg) == std::end(kTargets)) {
    return InvalidArgument(fmt::format("reboot: unknown target '{}'", arg.substr(0, 20)));
  }
  return RebootTo(arg);
}
Result<std::string> Session::DoRebootBootloader(const std::string&) { return RebootTo("bootloader"); }
Result<std::string> Session::DoRebootFastboot(const std::string&) { return RebootTo("fastboot"); }
Result<std::string> Session::DoRebootRecovery(const std::string&) { return RebootTo("recovery"); }
Result<std::string> Session::DoContinue(const std::string&) { return RebootTo("continue"); }

Result<std::string> Session::DoShutdown(const std::string&) {
  after_ = After::kShutdown;
  return std::string();
}

Result<std::string> Session::DoOem(const std::string& arg) {
  std::vector<std::string> words = SplitWords(arg);
  if (words.empty()) return InvalidArgument("oem: missing command");
  for (const auto& builtin : kBuiltinOems) {
    if (std::string range = BuiltinOemArgument(arg, builtin.name); !range.empty() || arg == builtin.name) {
      return (this->*builtin.handler)(range);
    }
  }
  const DeviceConfig& config = device_->config();
  auto oem = std::find_if(config.oem.begin(), config.oem.end(),
                          [&](const OemCommand& c) { return c.name == words[0]; });
  if (oem == config.oem.end()) return Unsupported(fmt::format("oem {}: not configured", words[0].substr(0, 40)));
  if (device_->state().locked() && !oem->allowed_locked) return Locked(fmt::format("oem {}", oem->name));
  std::vector<std::string> args(words.begin() + 1, words.end());
  return RunClientHook(oem->command, "oem " + oem->name, oem->name, args, HookEnvironment(HookState("oem")));
}

Result<std::string> Session::RunClientHook(const std::string& command, const std::string& what,
                                           const std::string& name, const std::vector<std::string>& args,
                                           const std::vector<std::string>& env) {
  const DeviceConfig& config = device_->config();
  HookLimits limits{.timeout = config.hook_timeout, .output_limit = kOemOutputLimit};
  limits.cancelled = [this] { return !transport_error_.ok() || transport_->ClientGone(); };
  auto to_client = [this](std::string_view line) {
    if (line.size() <= kMaxMessage) {
      (void)SendInfo(line);  // as the command wrote it, spaces and all
      return;
    }
    for (const auto& piece : WrapWords(line, kMaxMessage)) (void)SendInfo(piece);
  };
  FP_ASSIGN_OR_RETURN(HookResult r, RunHook(command, name, args, limits, to_client, env));
  if (r.cancelled && transport_error_.ok()) {
    transport_error_ = Cancelled(fmt::format("client gone during {}", what));
  }
  if (!transport_error_.ok()) return transport_error_;
  if (r.dropped_bytes > 0) {
    (void)SendInfo(fmt::format("{}: {} more bytes of output dropped", what, r.dropped_bytes));
  }
  if (r.timed_out) {
    log::Warn("{}: {} killed after {} ms", transport_->peer(), what, config.hook_timeout.count());
    return TimedOut(fmt::format("{}: killed after {} s", what, config.hook_timeout.count() / 1000));
  }
  if (r.exit_status != 0) {
    return Status(Code::kIoError, fmt::format("{}: exit status {}", what, r.exit_status));
  }
  return std::string();
}

Result<std::string> Session::DoBoot(const std::string&) {
  if (device_->config().on_boot.empty()) {
    // The FAIL must stay whole in 64 bytes; the details go first as INFO.
    if (!SendInfo("to run an image: fastboot flash boot IMAGE, then fastboot reboot").ok() ||
        !SendInfo("(or start flashpipe serve with --on-boot COMMAND, e.g. kexec)").ok()) {
      return transport_error_;
    }
    return Unsupported("boot: not supported: flash boot, then reboot");
  }
  auto saved = device_->SaveDownload();
  if (!saved.ok()) return saved.status().WithContext("boot");
  boot_image_ = *saved;
  after_ = After::kBoot;
  return std::string();
}

// --- reading back (readback.h) -----------------------------------------------

bool Session::IsBuiltinOem(std::string_view name) {
  return std::any_of(std::begin(kBuiltinOems), std::end(kBuiltinOems),
                     [&](const BuiltinOem& b) { return b.name == name; });
}

// The most one fetch or upload sends: max-download-size (fastbootd has one
// size for both ways), below 2 GiB (the 29.0.6 client keeps the size in an
// int), and what the transport delivers in one client read (UDP: 1 MiB).
uint64_t Session::MaxFetch() const {
  return std::min<uint64_t>({device_->config().max_download_size, 0x7fffffffu, transport_->max_data()});
}

Result<std::pair<const Partition*, ByteRange>> Session::ResolveRead(const std::string& text) {
  FP_ASSIGN_OR_RETURN(RangeArg arg, ParseRangeArg(text));
  FP_ASSIGN_OR_RETURN(const Partition* p, Resolve(arg.partition));
  FP_ASSIGN_OR_RETURN(ByteRange range, ResolveRange(*p, arg));
  return std::make_pair(p, range);
}

Result<StagedRange> Session::ResolveFetch(const std::string& text) {
  FP_ASSIGN_OR_RETURN(auto read, ResolveRead(text));
  if (read.second.size > MaxFetch()) {
    return InvalidArgument(fmt::format("0x{:x} bytes > max-fetch-size 0x{:x}: fetch in parts", read.second.size,
                                       MaxFetch()));
  }
  return StagedRange{read.first->name, read.second};
}

Result<std::string> Session::SendStaged(const StagedRange& staged) {
  const Partition* p = device_->storage().Find(staged.partition);
  if (p == nullptr) return NotFound(fmt::format("partition '{}' not found", staged.partition));
  if (staged.range.size == 0) return std::string("read 0 bytes");  // as fastbootd: no data phase
  FP_ASSIGN_OR_RETURN(auto reader, RangeReader::Open(device_->storage(), *p, staged.range));
  Status read_error;
  if (Status st = SendRange(*transport_, *reader, staged.range.size, &read_error); !st.ok()) {
    transport_error_ = st;
    return st;
  }
  if (!read_error.ok()) return read_error;  // the host got zeros for the rest
  log::Debug("{}: sent '{}' 0x{:x}+0x{:x}", transport_->peer(), p->name, staged.range.offset, staged.range.size);
  return std::string();
}

Result<std::string> Session::DoFetch(const std::string& arg) {
  FP_ASSIGN_OR_RETURN(StagedRange staged, ResolveFetch(arg));
  device_->Stage(staged);
  return SendStaged(staged);
}

Result<std::string> Session::DoUpload(const std::string&) {
  if (!device_->staged()) return InvalidArgument("nothing staged: oem stage PARTITION[:OFFSET[:SIZE]] or fetch first");
  StagedRange staged = *device_->staged();
  if (staged.range.size > MaxFetch()) {  // staged over another transport
    return InvalidArgument(fmt::format("staged 0x{:x} bytes > max-fetch-size 0x{:x}", staged.range.size, MaxFetch()));
  }
  return SendStaged(staged);
}

Result<std::string> Session::DoOemStage(const std::string& range) {
  if (device_->state().locked()) return Locked("oem stage");
  FP_ASSIGN_OR_RETURN(StagedRange staged, ResolveFetch(range));
  if (staged.range.size == 0) return InvalidArgument("oem stage: 0 bytes");
  device_->Stage(staged);
  if (!SendInfo(fmt::format("staged 0x{:x} bytes of '{}' for upload", staged.range.size, staged.partition)).ok()) {
    return transport_error_;
  }
  return std::string();
}

// The digest goes out as two INFO lines ("sha256 1/2 " and "sha256 2/2 ",
// 32 hex digits each): 64 digits do not fit one 64-byte response.
Result<std::string> Session::DoOemDigest(const std::string& range) {
  if (device_->state().locked()) return Locked("oem digest");
  FP_ASSIGN_OR_RETURN(auto read, ResolveRead(range));
  // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
  const Partition* p = read.first;
  const auto bytes = read.second;
  FP_ASSIGN_OR_RETURN(auto reader, RangeReader::Open(device_->storage(), *p, bytes));
  auto last = Clock::now();
  auto progress = [&](uint64_t done) -> Status {
    auto now = Clock::now();
    if (now - last < std::chrono::seconds(1)) return Status::Ok();
    last = now;
    return SendInfo(fmt::format("digest '{}' {}% ({})", p->name, done * 100 / bytes.size, FormatBytes(done)));
  };
  auto digest = DigestRange(*reader, progress);
  if (!transport_error_.ok()) return transport_error_;
  if (!digest.ok()) return digest.status();
  std::string hex = Sha256::Hex(*digest);
  if (!SendInfo("sha256 1/2 " + hex.substr(0, 32)).ok() || !SendInfo("sha256 2/2 " + hex.substr(32)).ok()) {
    return transport_error_;
  }
  log::Debug("{}: sha256 of '{}' 0x{:x}+0x{:x}: {}", transport_->peer(), p->name, bytes.offset, bytes.size, hex);
  return std::string();
}

// --- variables --------------------------------------------------------------

Result<std::string> Session::VarVersion(std::string_view) { return std::string("0.4"); }
Result<std::string> Session::VarVersionBootloader(std::string_view) {
  return std::string("flashpipe-" FLASHPIPE_VERSION);
}
Result<std::string> Session::VarVersionBaseband(std::string_view) { return std::string("N/A"); }
Result<std::string> Session::VarProduct(std::string_view) { return device_->config().product; }
Result<std::string> Session::VarSerialno(std::string_view) { return device_->config().serialno; }
Result<std::string> Session::VarMaxDownloadSize(std::string_view) {
  return Hex32(device_->config().max_download_size);
}
Result<std::string> Session::VarCurrentSlot(std::string_view) {
  if (!HasSlots()) return Unsupported("device has no A/B partitions");
  return std::string(1, ActiveSlot());
}
Result<std::string> Session::VarSlotCount(std::string_view) { return std::string(HasSlots() ? "2" : "0"); }
// A daemon with a super is userspace fastboot from the start: the client
// flashes logical partitions only there (it reboots into it otherwise).
Result<std::string> Session::VarIsUserspace(std::string_view) {
  return std::string(device_->userspace() || device_->storage().dynamic() != nullptr ? "yes" : "no");
}
Result<std::string> Session::VarSecure(std::string_view) {
  return std::string(device_->state().locked() ? "yes" : "no");
}
Result<std::string> Session::VarUnlocked(std::string_view) {
  return std::string(device_->state().locked() ? "no" : "yes");
}
Result<std::string> Session::VarLogicalBlockSize(std::string_view) {
  const auto& parts = device_->storage().partitions();
  if (parts.empty()) return NotFound("no partitions");
  return fmt::format("0x{:x}", device_->storage().geometry(parts[0]).logical_block);
}
Result<std::string> Session::VarEraseBlockSize(std::string_view) {
  const auto& parts = device_->storage().partitions();
  if (parts.empty()) return NotFound("no partitions");
  return fmt::format("0x{:x}", device_->storage().geometry(parts[0]).physical_block);
}
Result<std::string> Session::VarPartitionSize(std::string_view partition) {
  FP_ASSIGN_OR_RETURN(const Partition* p, Resolve(std::string(partition)));
  return Hex64(p->size);
}
Result<std::string> Session::VarPartitionType(std::string_view partition) {
  FP_ASSIGN_OR_RETURN(const Partition* p, Resolve(std::string(partition)));
  return ChoosePartitionType(p->name, p->type_guid, device_->config().partition_types,
                             [&] { return device_->storage().ProbeType(*p); });
}
Result<std::string> Session::VarHasSlot(std::string_view partition) {
  std::string name(partition);
  auto& storage = device_->storage();
  if (storage.Find(name + "_a") != nullptr || storage.Find(name + "_b") != nullptr) return std::string("yes");
  if (storage.Find(name) != nullptr) return std::string("no");
  // As fastbootd: `flashall --slot all` asks about every image it knows
  // (odm, dtbo, ...) and gives up on a FAIL.
  if (*VarIsUserspace({}) == "yes") return std::string("no");
  return NotFound(fmt::format("partition '{}' not found", name.substr(0, 40)));
}
// stream-flash is flashpipe's own command (see DoStreamFlash): a client that
// knows it asks this first; others never send it.
Result<std::string> Session::VarStreamFlash(std::string_view) { return std::string("yes"); }

Result<std::string> Session::VarMaxFetchSize(std::string_view) {
  if (MaxFetch() == 0) return Unsupported("fetch is not supported over this transport");
  return Hex32(static_cast<uint32_t>(MaxFetch()));
}
Result<std::string> Session::VarIsLogical(std::string_view partition) {
  FP_ASSIGN_OR_RETURN(const Partition* p, Resolve(std::string(partition)));
  return std::string(p->logical ? "yes" : "no");
}

Result<std::string> Session::VarSlotSuccessful(std::string_view slot) {
  FP_ASSIGN_OR_RETURN(SlotMetadata m, MiscSlot(slot));
  return std::string(m.successful_boot ? "yes" : "no");
}
Result<std::string> Session::VarSlotUnbootable(std::string_view slot) {
  FP_ASSIGN_OR_RETURN(SlotMetadata m, MiscSlot(slot));
  return std::string(IsBootable(m) ? "no" : "yes");
}
Result<std::string> Session::VarSlotRetryCount(std::string_view slot) {
  FP_ASSIGN_OR_RETURN(SlotMetadata m, MiscSlot(slot));
  return std::to_string(m.tries_remaining);
}

}  // namespace flashpipe::fastboot
