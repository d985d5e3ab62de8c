// FastbootDevice: the state one fastboot device keeps across sessions (see
// device.h): who holds the session, the download buffers and what landed in
// them, and the write-behind worker that flashes queued images while the next
// download arrives.
#include "fastboot/device.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/fd_io.h"
#include "base/log.h"
#include "base/unique_fd.h"
#include "base/units.h"
#include "fastboot/dynamic_partitions.h"

namespace flashpipe::fastboot {
namespace {

// "write-behind to 'system' failed (No space left on device): ...": the
// partition and the cause first, so that they fit in the 60 bytes of a FAIL.
Status WriteBehindError(std::string_view how, std::string_view what, const Status& st) {
  std::string cause = st.sys_errno() != 0 ? std::strerror(st.sys_errno()) : std::string(CodeName(st.code()));
  return Status(st.code(), fmt::format("{} to {} failed ({}): {}", how, what, cause, st.message()));
}

// "64.0 MiB in 0.52 s, 123 MiB/s": the one line each flash and erase logs.
std::string Took(uint64_t bytes, std::chrono::steady_clock::duration d) {
  double s = std::chrono::duration<double>(d).count();
  uint64_t rate = s > 0 ? static_cast<uint64_t>(static_cast<double>(bytes) / s) : 0;
  return fmt::format("{} in {:.2f} s, {}/s", FormatBytes(bytes), s, FormatBytes(rate));
}

std::string Names(const std::vector<Partition>& parts) {
  std::string out;
  for (const auto& p : parts) out += fmt::format("{}'{}'", out.empty() ? "" : ", ", p.name);
  return out;
}

}  // namespace

FastbootDevice::FastbootDevice(DeviceConfig config, std::unique_ptr<Storage> storage, PersistentState state)
    : config_(std::move(config)), storage_(std::move(storage)), state_(std::move(state)) {
  for (auto& b : buffers_) b = std::make_unique<DownloadBuffer>(Landing::CapacityFor(config_.max_download_size));
  // Write-behind flashes and streamed downloads (stream-flash) run here.
  worker_ = std::thread([this] { WorkerLoop(); });
  if (config_.prefault) {
    prefault_ = std::thread([this] {
      buffers_[0]->Prefault();
      if (config_.write_behind) buffers_[1]->Prefault();
    });
  }
}

FastbootDevice::~FastbootDevice() {
  landing_.Abort(Cancelled("the daemon is stopping"));  // a stream job waiting for bytes ends
  if (prefault_.joinable()) prefault_.join();
  if (worker_.joinable()) {
    {
      std::lock_guard lock(job_mu_);
      stop_ = true;
    }
    job_cv_.notify_all();
    worker_.join();
  }
}

bool FastbootDevice::IsCritical(std::string_view name) const {
  for (const auto& c : config_.critical) {
    if (name == c) return true;
    if (name.size() == c.size() + 2 && name.substr(0, c.size()) == c &&
        (name.substr(c.size()) == "_a" || name.substr(c.size()) == "_b")) {
      return true;
    }
  }
  return false;
}

bool FastbootDevice::TryAcquire(const std::string& owner, std::function<bool()> yield) {
  std::lock_guard lock(owner_mu_);
  if (!owner_.empty()) return false;
  owner_ = owner;
  yield_ = std::move(yield);
  return true;
}

bool FastbootDevice::AskToYield() {
  std::function<bool()> yield;
  {
    std::lock_guard lock(owner_mu_);
    yield = yield_;
  }
  return yield && yield();  // outside the lock: the holder takes its own locks
}

void FastbootDevice::Release() {
  std::lock_guard lock(owner_mu_);
  owner_.clear();
  yield_ = nullptr;
}

std::string FastbootDevice::owner() const {
  std::lock_guard lock(owner_mu_);
  return owner_;
}

void FastbootDevice::RequestExit() {
  {
    std::lock_guard lock(owner_mu_);
    exit_ = true;
  }
  exit_cv_.notify_all();
}

bool FastbootDevice::exit_requested() const {
  std::lock_guard lock(owner_mu_);
  return exit_;
}

void FastbootDevice::WaitForExit() {
  std::unique_lock lock(owner_mu_);
  exit_cv_.wait(lock, [this] { return exit_; });
}

Status FastbootDevice::BeginDownload(uint32_t size, const Partition* stream_to) {
  image_ready_ = false;
  streamed_to_.reset();
  // The session refuses larger downloads first; the buffer is sized for this.
  if (size > config_.max_download_size) {
    return InvalidArgument(fmt::format("download of {} bytes above the buffer for {}", size, config_.max_download_size));
  }
  std::unique_lock lock(job_mu_);
  // A stream's job takes the slot: the write before it (another part of
  // the same image, perhaps) ends first, and its buffer is then free.
  if (stream_to != nullptr) {
    ++flash_waiting_;
    job_cv_.wait(lock, [this] { return !job_.has_value(); });
    --flash_waiting_;
  }
  download_buffer_ = job_buffer_ == 0 ? 1 : 0;
  auto all = buffers_[download_buffer_]->Get();
  if (!all.ok()) {
    job_cv_.notify_all();
    return all.status();
  }
  std::shared_ptr<DownloadStream> stream;
  if (stream_to != nullptr) stream = std::make_shared<DownloadStream>(size);
  // A fresh buffer's pages are faulted in ahead of the bytes (--prefault did it at start).
  landing_.Begin(*all, size, /*prefault=*/!config_.prefault, stream);
  if (stream != nullptr) {
    job_ = Job{*stream_to, {}, false, size, stream};
    job_buffer_ = download_buffer_;
    streamed_to_ = stream_to->name;
    lock.unlock();
    job_cv_.notify_all();
    log::Debug("download of {} bytes into buffer {}, written to '{}' as it arrives", size, download_buffer_,
               stream_to->name);
    return Status::Ok();
  }
  log::Debug("download of {} bytes into buffer {}", size, download_buffer_);
  return Status::Ok();
}

void FastbootDevice::EndDownload() {
  (void)landing_.Finish();
  image_ready_ = true;
  if (const Prefaulter* p = landing_.prefaulter(); p != nullptr) {
    // Skipped: pages the receiver faulted itself, because it got there first.
    log::Debug("download complete ({} pieces; buffer prefaulted to {}, {} of it skipped)",
               landing_.pieces().size(), FormatBytes(p->populated()), FormatBytes(p->skipped()));
  } else {
    log::Debug("download complete ({} pieces)", landing_.pieces().size());
  }
}

void FastbootDevice::AbortDownload(Status why) {
  image_ready_ = false;
  landing_.Abort(std::move(why));
}

Status FastbootDevice::Flash(const Partition& p, const ProgressFn& progress, bool* queued) {
  *queued = false;
  if (!image_ready_) return InvalidArgument("no image downloaded");
  if (streamed_to_) return FlashStreamed(p, queued);
  const ImageCheck& check = landing_.check();
  if (!check.status().ok()) {
    return check.status().WithContext(check.sparse() ? "invalid sparse image" : "invalid image");
  }
  if (check.image_size() > p.size) {
    return NoSpace(fmt::format("image of {} bytes > partition '{}' of {} bytes", check.image_size(),
                               p.name, p.size));
  }
  const bool super = storage_->IsSuper(p);
  if (super && !config_.write_behind) {
    // Its metadata is read again once it is written.
    Status st = WaitWrites();
    if (st.ok()) st = storage_->Write(p, landing_.pieces(), check.sparse(), progress);
    storage_->dynamic()->Reload();
    return st;
  }
  if (!config_.write_behind) {
    FP_RETURN_IF_ERROR(WaitWrites());  // a streamed download's job, if one is still ending
    auto start = std::chrono::steady_clock::now();
    FP_RETURN_IF_ERROR(storage_->Write(p, landing_.pieces(), check.sparse(), progress));
    log::Info("flash '{}': {} image, {}", p.name, check.sparse() ? "sparse" : "raw",
              Took(landing_.received(), std::chrono::steady_clock::now() - start));
    return Status::Ok();
  }
  {
    std::unique_lock lock(job_mu_);
    ++flash_waiting_;
    job_cv_.wait(lock, [this] { return !job_.has_value(); });
    --flash_waiting_;
    if (Status st = std::exchange(job_error_, Status::Ok()); !st.ok()) {
      job_cv_.notify_all();  // the worker may sync now
      return st;
    }
    job_ = Job{p, landing_.pieces(), check.sparse(), landing_.received(), nullptr};
    job_buffer_ = download_buffer_;
  }
  if (super) super_unsettled_ = true;
  job_cv_.notify_all();
  *queued = true;
  return Status::Ok();
}

// The stream's job wrote the image while it arrived; the flash names the
// partition it went to and takes the job's answer.
Status FastbootDevice::FlashStreamed(const Partition& p, bool* queued) {
  if (p.name != *streamed_to_) {
    return InvalidArgument(fmt::format("download went to '{}' (stream-flash), not '{}'", *streamed_to_, p.name));
  }
  const bool super = storage_->IsSuper(p);
  const ImageCheck& check = landing_.check();
  if (config_.write_behind && check.status().ok()) {
    // As any write-behind flash: its error comes with the next command.
    if (super) super_unsettled_ = true;
    *queued = true;
    return Status::Ok();
  }
  Status st = WaitWrites();  // the job's last writes and the sync
  if (super) storage_->dynamic()->Reload();
  if (!st.ok()) return st;
  if (!check.status().ok()) {
    // Only a CRC32 chunk, checked after the last byte, gets here: the
    // decoder the job ran stops at every other fault.
    return check.status().WithContext(fmt::format("invalid sparse image, written to '{}' as it arrived", p.name));
  }
  log::Info("flash '{}': {} image, {} bytes written as they arrived", p.name, check.sparse() ? "sparse" : "raw",
            landing_.received());
  return Status::Ok();
}

Result<std::string> FastbootDevice::SaveDownload() {
  if (!image_ready_) return InvalidArgument("no image downloaded");
  if (landing_.check().sparse()) return InvalidArgument("a sparse image cannot be booted");
  const char* tmp = std::getenv("TMPDIR");
  std::string path = fmt::format("{}/flashpipe-boot-XXXXXX", tmp != nullptr && *tmp != 0 ? tmp : "/tmp");
  UniqueFd fd(::mkostemp(path.data(), O_CLOEXEC));  // O_EXCL, mode 0600
  if (!fd.valid()) return ErrnoError(fmt::format("create {}", path));
  for (const auto& piece : landing_.pieces()) {
    if (Status st = WriteAll(fd.get(), piece, path); !st.ok()) {
      ::unlink(path.c_str());
      return st;
    }
  }
  log::Info("boot image of {} bytes saved in {}", landing_.received(), path);
  return path;
}

Status FastbootDevice::Erase(const Partition& p) {
  auto start = std::chrono::steady_clock::now();
  FP_RETURN_IF_ERROR(storage_->Erase(p));
  log::Info("erase '{}': {}", p.name, Took(p.size, std::chrono::steady_clock::now() - start));
  return Status::Ok();
}

Result<std::span<const uint8_t>> FastbootDevice::DownloadedBytes(std::vector<uint8_t>* scratch) const {
  if (!image_ready_) return InvalidArgument("no image downloaded");
  const auto& pieces = landing_.pieces();
  if (pieces.size() == 1) return pieces[0];
  scratch->clear();
  for (const auto& piece : pieces) scratch->insert(scratch->end(), piece.begin(), piece.end());
  return std::span<const uint8_t>(*scratch);
}

Status FastbootDevice::WaitWrites() {
  std::unique_lock lock(job_mu_);
  job_cv_.wait(lock, [this] { return !job_.has_value() && unsynced_.empty() && !syncing_; });
  return std::exchange(job_error_, Status::Ok());
}

Status FastbootDevice::WaitWritesAndSuper() {
  Status st = WaitWrites();
  if (std::exchange(super_unsettled_, false)) storage_->dynamic()->Reload();
  return st;
}

Status FastbootDevice::TakeWriteError() {
  std::lock_guard lock(job_mu_);
  if (job_.has_value()) return Status::Ok();
  return std::exchange(job_error_, Status::Ok());
}

// Runs queued flashes without syncing, and syncs what they wrote only when
// no flash is queued or waiting: the parts of one split image are written
// back to back and synced once, and a sync never delays the next part.
void FastbootDevice::WorkerLoop() {
  std::unique_lock lock(job_mu_);
  for (;;) {
    job_cv_.wait(lock, [this] {
      return stop_ || job_.has_value() || (!unsynced_.empty() && flash_waiting_ == 0);
    });
    if (job_.has_value()) {
      Job job = *job_;
      lock.unlock();
      const char* how = job.stream ? "stream-flash" : "write-behind";
      log::Debug("{} to '{}' starts", how, job.partition.name);
      auto start = std::chrono::steady_clock::now();
      Status st = job.stream ? storage_->WriteStream(job.partition, *job.stream, /*sync=*/false)
                             : storage_->Write(job.partition, job.pieces, job.sparse, nullptr, /*sync=*/false);
      if (st.ok()) {
        log::Info("flash '{}': {} {}, {} ({}, synced later)", job.partition.name,
                  job.stream ? "streamed" : job.sparse ? "sparse" : "raw", "image",
                  Took(job.bytes, std::chrono::steady_clock::now() - start), how);
      } else {
        log::Warn("{} to '{}': write failed: {}", how, job.partition.name, st.ToString());
      }
      lock.lock();
      if (!st.ok() && job_error_.ok()) job_error_ = WriteBehindError(how, fmt::format("'{}'", job.partition.name), st);
      // Synced even after a failure: what was written must not stay volatile.
      bool known = std::any_of(unsynced_.begin(), unsynced_.end(),
                               [&](const Partition& q) { return q.name == job.partition.name; });
      if (!known) unsynced_.push_back(job.partition);
      job_.reset();
      job_buffer_ = -1;
      job_cv_.notify_all();
      continue;
    }
    if (!unsynced_.empty() && flash_waiting_ == 0) {
      std::vector<Partition> parts = std::move(unsynced_);
      unsynced_.clear();
      syncing_ = true;
      lock.unlock();
      Status st = SyncWritten(parts);
      lock.lock();
      syncing_ = false;
      if (!st.ok() && job_error_.ok()) job_error_ = st;
      job_cv_.notify_all();
      continue;
    }
    if (stop_) return;
  }
}

// One fdatasync per device written; a failure names every partition
// written there since the last sync.
Status FastbootDevice::SyncWritten(const std::vector<Partition>& parts) {
  Status first;
  std::vector<size_t> synced;
  for (const auto& p : parts) {
    if (std::find(synced.begin(), synced.end(), p.backing) != synced.end()) continue;
    synced.push_back(p.backing);
    std::vector<Partition> same;
    std::copy_if(parts.begin(), parts.end(), std::back_inserter(same),
                 [&](const Partition& q) { return q.backing == p.backing; });
    Status st = storage_->Sync(p);
    if (st.ok()) {
      log::Debug("write-behind to {} synced", Names(same));
      continue;
    }
    log::Warn("write-behind to {}: write failed at the sync: {}", Names(same), st.ToString());
    if (first.ok()) first = WriteBehindError("write-behind", Names(same), st);
  }
  return first;
}

}  // namespace flashpipe::fastboot
