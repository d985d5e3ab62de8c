// Session: one client's conversation with a FastbootDevice, driven through a
// Connection. Commands dispatch through a table (name, handler, what it may do
// while the device is locked, whether write-behind flashes must finish
// first, whether it takes an argument); variables through another.
//
// Locked means locked for everything that changes the device, as in AOSP:
// download, flash, erase, set_active, update-super, the logical partition
// commands, `flashing unlock_critical` and oem commands not marked safe FAIL
// while `flashing lock` holds. Reading back (fetch, upload, oem stage, oem
// digest) FAILs too, as fastbootd refuses fetch: a locked device gives out
// no partition's content, not even as a digest of a range small enough to
// guess.
//
// With a super partition (Storage::AttachSuper) the session is a userspace
// fastboot for dynamic partitions, as fastbootd: is-logical, update-super,
// create/delete/resize-logical-partition (session_logical.cc); logical
// partitions are flashed and erased like physical ones.
//
// Partition tables (session_table.cc): `flash gpt` (when no partition is
// named gpt) writes the downloaded layout text or GPT image as the disk's
// table, `oem format` the layout serve was given (--layout), as U-Boot's
// `gpt write mmc N $partitions`. Both are refused while locked, wait for
// write-behind flashes first, check everything before the first write
// (partition/table_change.h), and answer with INFO lines saying what
// changed; the storage then reads its partition list again, so the next
// getvar or flash sees the new partitions. While critical partitions are
// locked (flashing lock_critical), a table that would move, resize or drop
// one of --critical is refused.
//
// A session starts without a download (an image belongs to the session that
// sent it) and ends at the device's time limits (deadlines.h): past
// session_timeout, or when a download arrives slower than the floor rate
// (then with a FAIL, since the client is waiting for an answer). Each handler returns Result<std::string>: the
// OKAY message, or a Status that becomes the FAIL (the one place a Status is
// turned into a FAIL: long reasons go out as INFO lines first, then a FAIL
// cut to 64 bytes). Handlers may send INFO lines before that.
//
//   Session s(&device, &transport);
//   Status st = s.Run();   // until the client leaves, reboots or shuts down
//
// Thread-compatible: runs on the thread that calls Run().
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "fastboot/boot_control.h"
#include "fastboot/device.h"
#include "fastboot/dynamic_partitions.h"
#include "fastboot/hook_env.h"
#include "fastboot/connection.h"
#include "partition/table_change.h"
#include "mmc/card.h"

namespace flashpipe::fastboot {

class Session {
 public:
  Session(FastbootDevice* device, Connection* transport);

  // OK when the client went away or a reboot/shutdown ended the session;
  // kTimedOut when a time limit ended it; another error when the transport
  // failed in a way that ends it.
  Status Run();
  // Run() ended with reboot*/continue (the USB transport then re-enumerates).
  bool rebooted() const { return after_ == After::kReboot; }
  // oem commands the daemon answers itself (stage, digest): an --oem of
  // the same name could never run.
  static bool IsBuiltinOem(std::string_view name);

 private:
  using Handler = Result<std::string> (Session::*)(const std::string& arg);
  using Getter = Result<std::string> (Session::*)(std::string_view partition);
  enum WhenLocked { kAllowed, kRefused, kHandlerDecides };
  struct CommandSpec {
    std::string_view name;
    Handler handler;
    WhenLocked when_locked;
    bool waits_for_writes;
    bool takes_argument;
  };
  // kPartition and kSlot take NAME after a colon (getvar:partition-size:boot,
  // getvar:slot-successful:a); getvar all lists them per partition, per slot.
  enum Scope { kDevice, kPartition, kSlot };
  struct VarSpec {
    std::string_view name;
    Getter get;
    Scope scope;
  };
  enum class After { kContinue, kEndSession, kReboot, kShutdown, kBoot };
  using OemHandler = Result<std::string> (Session::*)(const std::string& range);
  struct BuiltinOem {
    std::string_view name;
    OemHandler handler;
  };

  Status Dispatch(std::string_view wire);
  Status Reply(const Result<std::string>& result);
  Status SendInfo(std::string_view message);
  Status Expired() const;
  Result<std::string> EndSession(Status why);
  void RunAfterHooks();
  Result<const Partition*> Resolve(const std::string& name);
  Result<const Partition*> ResolveWritable(const std::string& name);
  bool HasSlots() const;
  // The device's state for a hook (hook_env.h); the slot is ActiveSlot().
  HookContext HookState(std::string_view hook);
  // Runs `command` now, its output going to the client as INFO lines;
  // `what` names it in the FAIL ("oem NAME", "set_active hook").
  Result<std::string> RunClientHook(const std::string& command, const std::string& what, const std::string& name,
                                    const std::vector<std::string>& args, const std::vector<std::string>& env);
  // With --misc: its partition; else nullptr.
  const Partition* Misc() const;
  // Misc's boot control block, or what the HAL would write over a missing one.
  Result<BootControlBytes> BootControl();
  Result<SlotMetadata> MiscSlot(std::string_view slot);
  // The slot to boot next: from misc with --misc, else the state file's.
  char ActiveSlot();

  Result<std::string> DoGetvar(const std::string& arg);
  Result<std::string> DoGetvarAll();
  Result<std::string> DoDownload(const std::string& arg);
  Result<std::string> DoFlash(const std::string& arg);
  // stream-flash:PART: the next download is written to PART while it
  // arrives (flashpipe's extension; getvar stream-flash says "yes"), so the
  // flash after it ends with the download instead of a part's write later.
  // The image is checked as it is written: one that turns out malformed
  // leaves PART written up to the fault, and the flash FAILs saying so.
  Result<std::string> DoStreamFlash(const std::string& arg);
  Result<std::string> DoErase(const std::string& arg);
  Result<std::string> DoSetActive(const std::string& arg);
  Result<std::string> DoFlashing(const std::string& arg);
  Result<std::string> DoReboot(const std::string& arg);
  Result<std::string> DoRebootBootloader(const std::string& arg);
  Result<std::string> DoRebootFastboot(const std::string& arg);
  Result<std::string> DoRebootRecovery(const std::string& arg);
  Result<std::string> DoContinue(const std::string& arg);
  Result<std::string> DoShutdown(const std::string& arg);
  Result<std::string> DoBoot(const std::string& arg);
  Result<std::string> DoOem(const std::string& arg);
  // session_logical.cc
  Result<std::string> DoUpdateSuper(const std::string& arg);
  Result<std::string> DoCreateLogical(const std::string& arg);
  Result<std::string> DoDeleteLogical(const std::string& arg);
  Result<std::string> DoResizeLogical(const std::string& arg);
  Result<DynamicPartitions*> SuperForChange(std::string_view what);
  Result<std::string> VarSuperPartitionName(std::string_view);
  Result<std::string> RebootTo(std::string target);
  // session_table.cc
  Result<std::string> DoFlashGpt();
  Result<std::string> DoOemFormat(const std::string& arg);
  Result<std::string> ChangeTable(std::span<const uint8_t> source, std::string_view source_name);
  Status ApproveTable(const partition::PartitionOutcome& plan);
  // Reading back (readback.h): fetch, upload, oem stage, oem digest.
  Result<std::string> DoFetch(const std::string& arg);
  Result<std::string> DoUpload(const std::string& arg);
  Result<std::string> DoOemStage(const std::string& range);
  Result<std::string> DoOemDigest(const std::string& range);
  // The eMMC's boot settings (session_mmc.cc): oem partconf, oem bootbus.
  Result<std::string> DoOemPartconf(const std::string& args);
  Result<std::string> DoOemBootbus(const std::string& args);
  Result<std::string> Report(const mmc::FieldChange& change);
  Result<std::pair<const Partition*, ByteRange>> ResolveRead(const std::string& text);
  Result<StagedRange> ResolveFetch(const std::string& text);
  Result<std::string> SendStaged(const StagedRange& staged);
  uint64_t MaxFetch() const;

  Result<std::string> VarVersion(std::string_view);
  Result<std::string> VarVersionBootloader(std::string_view);
  Result<std::string> VarVersionBaseband(std::string_view);
  Result<std::string> VarProduct(std::string_view);
  Result<std::string> VarSerialno(std::string_view);
  Result<std::string> VarMaxDownloadSize(std::string_view);
  Result<std::string> VarCurrentSlot(std::string_view);
  Result<std::string> VarSlotCount(std::string_view);
  Result<std::string> VarIsUserspace(std::string_view);
  Result<std::string> VarSecure(std::string_view);
  Result<std::string> VarUnlocked(std::string_view);
  Result<std::string> VarLogicalBlockSize(std::string_view);
  Result<std::string> VarEraseBlockSize(std::string_view);
  Result<std::string> VarPartitionSize(std::string_view partition);
  Result<std::string> VarPartitionType(std::string_view partition);
  Result<std::string> VarHasSlot(std::string_view partition);
  Result<std::string> VarIsLogical(std::string_view partition);
  Result<std::string> VarSlotSuccessful(std::string_view slot);
  Result<std::string> VarSlotUnbootable(std::string_view slot);
  Result<std::string> VarSlotRetryCount(std::string_view slot);
  Result<std::string> VarMaxFetchSize(std::string_view);
  Result<std::string> VarStreamFlash(std::string_view);

  static const CommandSpec kCommands[];
  static const VarSpec kVars[];
  static const BuiltinOem kBuiltinOems[];

  FastbootDevice* device_;
  Connection* transport_;
  After after_ = After::kContinue;
  std::string reboot_target_;
  std::string boot_image_;  // the file `boot` saved, for the boot hook
  Status transport_error_;
  Status end_status_;  // why the session was ended early (a time limit)
  Connection::Deadline deadline_ = Connection::Deadline::max();
  std::optional<std::string> stream_to_;  // stream-flash: the next download's partition
};

}  // namespace flashpipe::fastboot
