// FastbootDevice: everything a fastboot device is between and across
// sessions: its configuration, its storage, its persisted state (slot, lock),
// the download buffers, the image last downloaded, and the write-behind
// worker. Sessions (session.h) come and go, one at a time (TryAcquire); a
// write-behind flash may outlive the session that queued it.
//
// Flash is synchronous by default. With write_behind, Flash() returns once
// the write is queued on the worker thread and the next download lands in the
// other of two buffers; a failure is kept and reported by the next command
// (TakeWriteError, WaitWrites). A streamed download (stream-flash) is written
// by the same worker while it arrives, in either mode. Thread-safe where noted; the rest is called
// by the one session thread holding the device.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "fastboot/deadlines.h"
#include "fastboot/download.h"
#include "fastboot/partition_type.h"
#include "fastboot/readback.h"
#include "fastboot/state.h"
#include "fastboot/storage.h"
#include "mmc/mmc_device.h"

namespace flashpipe::fastboot {

// `fastboot oem NAME ARGS`: runs `command` with ARGS as $1..$n (hooks.h).
// While the device is locked only commands marked allowed_locked run: an
// oem command may change anything, so the daemon cannot tell a harmless
// one from a dangerous one; the one who configures it can (--oem-safe).
struct OemCommand {
  std::string name;
  std::string command;
  bool allowed_locked = false;
};

struct DeviceConfig {
  std::string product = "flashpipe";
  std::string serialno = "flashpipe";
  uint32_t max_download_size = 256u << 20;
  std::vector<OemCommand> oem;
  std::string on_reboot;    // run after reboot*/continue was answered; $1 = target
  std::string on_shutdown;  // run after shutdown was answered
  // Run before set_active answers, after the slot is saved (hook_env.h).
  std::string on_set_active;
  // `fastboot boot`: run after the answer with $1 = the downloaded image,
  // saved in a temp file (removed when the hook returns). Empty: boot FAILs.
  std::string on_boot;
  // --misc PART: set_active writes the slot into PART's bootloader_control,
  // and the slot variables read it back (misc_slot.h).
  std::string misc;
  // Longest run of an oem command or a hook; then its process group is killed.
  std::chrono::milliseconds hook_timeout{60000};
  SessionLimits limits;
  bool exit_on_shutdown = false;
  // Partitions (base names; NAME also covers NAME_a and NAME_b) that flash
  // and erase refuse while the critical lock is on (flashing lock_critical,
  // the default; flashing unlock_critical lifts it).
  std::vector<std::string> critical;
  // --partition-type NAME=ext4|f2fs|raw: what getvar partition-type says
  // (partition_type.h), whatever the partition holds now.
  std::vector<PartitionTypeSetting> partition_types;
  bool write_behind = false;
  // Fault the download buffer(s) in on a background thread at start: the
  // daemon then holds max_download_size (x2 with write_behind) from the
  // start. Off: each download's pages are faulted in on another thread a
  // little ahead of its bytes (Landing, download.h), so memory grows to the
  // largest download and a fresh buffer costs the receiver no page faults.
  bool prefault = false;
  bool unlock_allowed = true;
  // --layout FILE: the layout `oem format` writes (its text, checked to
  // parse at start; resolved on the disk when the command runs).
  std::string layout;
  std::string layout_name;
  // serve --mmc DEVICE: opens the eMMC that oem partconf and oem bootbus
  // write (session_mmc.cc); empty: they FAIL saying no eMMC was given.
  std::function<Result<std::unique_ptr<mmc::MmcDevice>>()> open_mmc;
};

class FastbootDevice {
 public:
  FastbootDevice(DeviceConfig config, std::unique_ptr<Storage> storage, PersistentState state);
  ~FastbootDevice();  // waits for a write-behind flash

  const DeviceConfig& config() const { return config_; }
  // `name` is one of config().critical, or NAME_a / NAME_b of one.
  bool IsCritical(std::string_view name) const;
  Storage& storage() { return *storage_; }
  PersistentState& state() { return state_; }

  // "Rebooted" into userspace fastboot (getvar is-userspace). Thread-safe.
  bool userspace() const { return userspace_; }
  void set_userspace(bool on) { userspace_ = on; }

  // One session at a time. Thread-safe. `yield`, when given, is the holder's
  // offer to give the device up between commands (a UDP session, which has
  // no end-of-session signal): it returns true when it agreed, and the holder
  // then calls Release() soon.
  bool TryAcquire(const std::string& owner, std::function<bool()> yield = nullptr);
  // Asks the holder to yield (see TryAcquire); false when it has no such
  // offer or is in the middle of a command.
  bool AskToYield();
  void Release();
  std::string owner() const;
  // Set by shutdown with exit_on_shutdown. Thread-safe.
  void RequestExit();
  bool exit_requested() const;
  void WaitForExit();

  // Download: Begin, then the transport receives into download_target()
  // (Landing, download.h); End when all bytes are in (or Abort when the
  // client went away). With `stream_to` (stream-flash:PART before the
  // download), the image is written to that partition while it arrives, by
  // a job on the worker thread (Storage::WriteStream) that starts once the
  // write before it has ended; the flash that follows the download then
  // waits only for the job's last writes (with write-behind, not even those).
  Status BeginDownload(uint32_t size, const Partition* stream_to = nullptr);
  DownloadTarget& download_target() { return landing_; }
  uint64_t download_received() const { return landing_.received(); }
  void EndDownload();
  // A stream's job stops with `why` (the bytes before it stay written).
  void AbortDownload(Status why = Status::Ok());
  // A new session starts without a download: an image belongs to the
  // session that sent it.
  void ForgetDownload() { image_ready_ = false; }

  // What `upload` sends: the range `oem stage` or the last fetch named
  // (readback.h). Unlike a download it outlives the session: the 29.0.6
  // client stages and uploads in two runs, two sessions.
  const std::optional<StagedRange>& staged() const { return staged_; }
  void Stage(StagedRange range) { staged_ = std::move(range); }
  // After a table change: the staged range may no longer be inside its partition.
  void ForgetStaged() { staged_.reset(); }

  // Validates the last download for `p` and writes it (or queues it).
  // *queued tells whether the write goes on in the background. A streamed
  // download was written to its partition as it arrived: `p` must be that
  // partition, and the answer is the stream job's (an invalid image FAILs
  // saying how much of it was written). The super
  // partition's (Storage::IsSuper) metadata is read again once it is
  // written: at once without write-behind, else by the next
  // WaitWritesAndSuper(). Each flash and erase logs one line: partition,
  // bytes, seconds, rate.
  Status Flash(const Partition& p, const ProgressFn& progress, bool* queued);
  // The bytes of the last download of this session, for commands that take
  // a small file rather than an image (update-super's super_empty.img): a
  // view of the buffer, or of `*scratch` when it landed in pieces.
  Result<std::span<const uint8_t>> DownloadedBytes(std::vector<uint8_t>* scratch) const;
  // The last download (raw, not sparse) saved in a new file in $TMPDIR (or
  // /tmp), made with O_EXCL and mode 0600; returns its path.
  Result<std::string> SaveDownload();
  // Makes the partition read back as zeros (Storage::Erase), and logs it.
  Status Erase(const Partition& p);
  // Waits for a write-behind flash and its sync; returns its error once.
  // Thread-safe.
  Status WaitWrites();
  // The error of a finished write-behind flash, without waiting (once).
  Status TakeWriteError();
  // WaitWrites(), then the super's metadata read again if a write-behind
  // flash of the super was queued since: before anything looks up a logical
  // partition. Session thread only.
  Status WaitWritesAndSuper();
  // A write-behind flash of the super is queued or unsettled.
  bool super_unsettled() const { return super_unsettled_; }

 private:
  struct Job {
    Partition partition;
    std::vector<std::span<const uint8_t>> pieces;
    bool sparse = false;
    uint64_t bytes = 0;  // as downloaded
    std::shared_ptr<DownloadStream> stream;  // stream-flash: the pieces come from here as they land
  };
  void WorkerLoop();
  Status FlashStreamed(const Partition& p, bool* queued);
  Status SyncWritten(const std::vector<Partition>& parts);

  DeviceConfig config_;
  std::unique_ptr<Storage> storage_;
  PersistentState state_;

  mutable std::mutex owner_mu_;
  std::string owner_;
  std::function<bool()> yield_;
  std::atomic<bool> userspace_{false};
  bool exit_ = false;
  std::condition_variable exit_cv_;

  std::unique_ptr<DownloadBuffer> buffers_[2];
  int download_buffer_ = -1;  // holds the last (or current) download
  bool image_ready_ = false;
  bool super_unsettled_ = false;  // session thread only
  std::optional<StagedRange> staged_;
  Landing landing_;  // the last (or current) download
  std::optional<std::string> streamed_to_;  // the last download was streamed to this partition

  std::mutex job_mu_;
  std::condition_variable job_cv_;
  std::optional<Job> job_;      // queued or running
  int job_buffer_ = -1;         // buffer the job reads, -1 when none
  Status job_error_;
  int flash_waiting_ = 0;               // Flash() calls waiting for the job slot
  std::vector<Partition> unsynced_;     // written by jobs, not yet synced
  bool syncing_ = false;
  bool stop_ = false;
  std::thread worker_;
  std::thread prefault_;
};

}  // namespace flashpipe::fastboot
