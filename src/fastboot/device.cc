// FastbootDevice: the state one fastboot device keeps across sessions (see
// device.h): who holds the session, the download buffers and what landed in
// them, and the write-behind worker that flashes queued images while the next
// download arrives.
#include "fastboot/device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/units.h"

namespace flashpipe::fastboot {
namespace {

// Milliseconds since the first call, for -v timelines of downloads and writes.
long long Millis() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

FastbootDevice::FastbootDevice(DeviceConfig config, std::unique_ptr<Storage> storage, PersistentState state)
    : config_(std::move(config)), storage_(std::move(storage)), state_(std::move(state)) {
  for (auto& b : buffers_) b = std::make_unique<DownloadBuffer>(Landing::CapacityFor(config_.max_download_size));
  if (config_.write_behind) worker_ = std::thread([this] { WorkerLoop(); });
  if (config_.prefault) {
    prefault_ = std::thread([this] {
      buffers_[0]->Prefault();
      if (config_.write_behind) buffers_[1]->Prefault();
    });
  }
}

FastbootDevice::~FastbootDevice() {
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

Status FastbootDevice::BeginDownload(uint32_t size) {
  image_ready_ = false;
  int busy;
  {
    std::lock_guard lock(job_mu_);
    busy = job_buffer_;
  }
  download_buffer_ = busy == 0 ? 1 : 0;
  // The session refuses larger downloads first; the buffer is sized for this.
  if (size > config_.max_download_size) {
    return InvalidArgument(fmt::format("download of {} bytes above the buffer for {}", size, config_.max_download_size));
  }
  FP_ASSIGN_OR_RETURN(std::span<uint8_t> all, buffers_[download_buffer_]->Get());
  landing_.Begin(all, size);
  if (config_.verbose) std::fprintf(stderr, "serve: %lld ms: download of %u bytes into buffer %d\n", Millis(), size, download_buffer_);
  return Status::Ok();
}

void FastbootDevice::EndDownload() {
  (void)landing_.Finish();
  image_ready_ = true;
  if (config_.verbose) {
    std::fprintf(stderr, "serve: %lld ms: download complete (%zu pieces)\n", Millis(), landing_.pieces().size());
  }
}

void FastbootDevice::AbortDownload() { image_ready_ = false; }

Status FastbootDevice::Flash(const Partition& p, const ProgressFn& progress, bool* queued) {
  *queued = false;
  if (!image_ready_) return InvalidArgument("no image downloaded");
  const ImageCheck& check = landing_.check();
  if (!check.status().ok()) {
    return check.status().WithContext(check.sparse() ? "invalid sparse image" : "invalid image");
  }
  if (check.image_size() > p.size) {
    return NoSpace(fmt::format("image of {} bytes > partition '{}' of {} bytes", check.image_size(),
                               p.name, p.size));
  }
  if (!config_.write_behind) return storage_->Write(p, landing_.pieces(), check.sparse(), progress);
  {
    std::unique_lock lock(job_mu_);
    ++flash_waiting_;
    job_cv_.wait(lock, [this] { return !job_.has_value(); });
    --flash_waiting_;
    if (Status st = std::exchange(job_error_, Status::Ok()); !st.ok()) {
      job_cv_.notify_all();  // the worker may sync now
      return st;
    }
    job_ = Job{p, landing_.pieces(), check.sparse()};
    job_buffer_ = download_buffer_;
  }
  job_cv_.notify_all();
  *queued = true;
  return Status::Ok();
}

Status FastbootDevice::WaitWrites() {
  std::unique_lock lock(job_mu_);
  job_cv_.wait(lock, [this] { return !job_.has_value() && unsynced_.empty() && !syncing_; });
  return std::exchange(job_error_, Status::Ok());
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
      if (config_.verbose) std::fprintf(stderr, "serve: %lld ms: write-behind to '%s' starts\n", Millis(), job.partition.name.c_str());
      Status st = storage_->Write(job.partition, job.pieces, job.sparse, nullptr, /*sync=*/false);
      if (config_.verbose) std::fprintf(stderr, "serve: %lld ms: write-behind ends: %s\n", Millis(), st.ToString().c_str());
      lock.lock();
      if (!st.ok() && job_error_.ok()) job_error_ = st.WithContext("write-behind flash");
      // Synced even after a failure: what was written must not stay volatile.
      bool known = std::any_of(unsynced_.begin(), unsynced_.end(),
                               [&](const Partition& q) { return q.backing == job.partition.backing; });
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
      Status st;
      for (const auto& q : parts) {
        Status s = storage_->Sync(q);
        if (!s.ok() && st.ok()) st = s;
      }
      if (config_.verbose) std::fprintf(stderr, "serve: %lld ms: write-behind synced: %s\n", Millis(), st.ToString().c_str());
      lock.lock();
      syncing_ = false;
      if (!st.ok() && job_error_.ok()) job_error_ = st.WithContext("write-behind flash");
      job_cv_.notify_all();
      continue;
    }
    if (stop_) return;
  }
}

}  // namespace flashpipe::fastboot
