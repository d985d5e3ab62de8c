// A fake FunctionFS for the USB transport's tests and fuzzer (header-only):
//
//   FakeEndpoints  BulkEndpoints over an in-memory USB bus: the test plays
//                  the host (HostSend: one bulk OUT transfer, cut into
//                  packets of the max packet size; HostTake: the next
//                  response on bulk IN) and the device side gets a USB
//                  controller's semantics: a read completes when full or at
//                  a short packet, a packet bigger than the rest of a read
//                  fails it with -EOVERFLOW, a write completes when the host
//                  takes it, Disconnect() fails every queued request with
//                  -ESHUTDOWN and refuses new ones until Reconnect().
//                  Records what the device did (reads queued at once, read
//                  sizes, cancels) for the tests to assert.
//   FakeEp0        ep0 as two pipes: the test writes 12-byte events, reads
//                  what the device wrote (descriptors).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/endian.h"
#include "fastboot/ffs_descriptors.h"
#include "fastboot/usb_endpoints.h"

namespace flashpipe::testing {

class FakeEndpoints final : public fastboot::BulkEndpoints {
 public:
  explicit FakeEndpoints(uint32_t max_packet = 512) : mps_(max_packet) {}

  // --- host side (any thread) ---
  // One bulk OUT transfer: packets of the max packet size, the last one
  // short; a transfer of whole packets ends with a zero-length packet only
  // when `zlp`.
  void HostSend(std::string_view bytes, bool zlp = false) {
    std::lock_guard l(mu_);
    for (size_t at = 0; at < bytes.size(); at += mps_) out_.emplace_back(bytes.substr(at, mps_));
    if (bytes.empty() || (zlp && bytes.size() % mps_ == 0)) out_.emplace_back();
    Match();
  }
  void HostSend(const std::vector<uint8_t>& bytes, bool zlp = false) {
    HostSend(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), zlp);
  }
  // The next response the device queued (the write then completes), waiting
  // up to `timeout`; nullopt when none came.
  std::optional<std::string> HostTake(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    std::unique_lock l(mu_);
    if (!cv_.wait_for(l, timeout, [&] { return !writes_.empty(); })) return std::nullopt;
    Write w = std::move(writes_.front());
    writes_.pop_front();
    done_.push_back({w.tag, static_cast<int64_t>(w.bytes.size())});
    cv_.notify_all();
    return w.bytes;
  }
  // Every response until the one that starts with OKAY/FAIL/DATA (INFO lines
  // and zero-length packets included), or until none comes in `timeout`.
  std::vector<std::string> HostTakeUntilFinal(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    std::vector<std::string> got;
    while (auto r = HostTake(timeout)) {
      got.push_back(*r);
      if (r->rfind("INFO", 0) != 0 && !r->empty()) break;
    }
    return got;
  }
  void Disconnect() {
    std::lock_guard l(mu_);
    connected_ = false;
    out_.clear();
    for (auto& r : reads_) done_.push_back({r.tag, -ESHUTDOWN});
    for (auto& w : writes_) done_.push_back({w.tag, -ESHUTDOWN});
    reads_.clear();
    writes_.clear();
    cv_.notify_all();
  }
  void Reconnect(uint32_t max_packet) {
    std::lock_guard l(mu_);
    connected_ = true;
    mps_ = max_packet;
  }

  // --- what the device did ---
  size_t max_reads_queued() const { std::lock_guard l(mu_); return max_reads_; }
  size_t reads_queued() const { std::lock_guard l(mu_); return reads_.size(); }
  size_t writes_queued() const { std::lock_guard l(mu_); return writes_.size(); }
  std::vector<size_t> read_sizes() const { std::lock_guard l(mu_); return read_sizes_; }
  unsigned cancels() const { std::lock_guard l(mu_); return cancels_; }
  unsigned packets_pending() const { std::lock_guard l(mu_); return static_cast<unsigned>(out_.size()); }

  // --- BulkEndpoints (the device side) ---
  Status SubmitRead(std::span<uint8_t> buf, uint64_t tag) override {
    std::lock_guard l(mu_);
    if (!connected_) return IoError("fake: submit read", EAGAIN);
    reads_.push_back({tag, buf, 0});
    read_sizes_.push_back(buf.size());
    max_reads_ = std::max(max_reads_, reads_.size());
    Match();
    return Status::Ok();
  }
  Status SubmitWrite(std::span<const uint8_t> data, uint64_t tag) override {
    std::lock_guard l(mu_);
    if (!connected_) return IoError("fake: submit write", EAGAIN);
    writes_.push_back({tag, std::string(reinterpret_cast<const char*>(data.data()), data.size())});
    cv_.notify_all();
    return Status::Ok();
  }
  Status Reap(std::vector<fastboot::EndpointDone>* done, std::chrono::milliseconds timeout) override {
    std::unique_lock l(mu_);
    cv_.wait_for(l, timeout, [&] { return !done_.empty() || woken_; });
    woken_ = false;
    done->insert(done->end(), done_.begin(), done_.end());
    done_.clear();
    return Status::Ok();
  }
  void Cancel(uint64_t tag) override {
    std::lock_guard l(mu_);
    for (auto it = reads_.begin(); it != reads_.end(); ++it) {
      if (it->tag != tag) continue;
      ++cancels_;
      done_.push_back({tag, it->got > 0 ? static_cast<int64_t>(it->got) : -ECONNRESET});
      reads_.erase(it);
      cv_.notify_all();
      return;
    }
    for (auto it = writes_.begin(); it != writes_.end(); ++it) {
      if (it->tag != tag) continue;
      ++cancels_;
      done_.push_back({tag, -ECONNRESET});
      writes_.erase(it);
      cv_.notify_all();
      return;
    }
  }
  void Wake() override {
    std::lock_guard l(mu_);
    woken_ = true;
    cv_.notify_all();
  }
  Result<uint32_t> MaxPacketSize() override {
    std::lock_guard l(mu_);
    if (!connected_) return IoError("fake: endpoint disabled", ENODEV);
    return mps_;
  }

 private:
  struct Read {
    uint64_t tag;
    std::span<uint8_t> buf;
    size_t got;
  };
  struct Write {
    uint64_t tag;
    std::string bytes;
  };

  // Moves OUT packets into the queued reads, oldest first.
  void Match() {
    while (!reads_.empty() && !out_.empty()) {
      Read& r = reads_.front();
      std::string& p = out_.front();
      size_t room = r.buf.size() - r.got;
      if (p.size() > room) {  // the controller cannot place it: data lost
        done_.push_back({r.tag, -EOVERFLOW});
        out_.pop_front();
        reads_.pop_front();
        continue;
      }
      std::memcpy(r.buf.data() + r.got, p.data(), p.size());
      r.got += p.size();
      bool short_packet = p.size() < mps_;
      out_.pop_front();
      if (short_packet || r.got == r.buf.size()) {
        done_.push_back({r.tag, static_cast<int64_t>(r.got)});
        reads_.pop_front();
      }
    }
    cv_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint32_t mps_;
  bool connected_ = true;
  bool woken_ = false;
  std::deque<std::string> out_;  // OUT packets not yet placed
  std::deque<Read> reads_;
  std::deque<Write> writes_;
  std::vector<fastboot::EndpointDone> done_;
  size_t max_reads_ = 0;
  std::vector<size_t> read_sizes_;
  unsigned cancels_ = 0;
};

class FakeEp0 {
 public:
  FakeEp0() {
    int a[2], b[2];
    if (::pipe2(a, O_CLOEXEC) != 0 || ::pipe2(b, O_CLOEXEC) != 0) std::abort();
    events_read_ = a[0];
    events_write_ = a[1];
    device_write_ = b[1];
    device_read_ = b[0];
    ::fcntl(device_read_, F_SETFL, O_NONBLOCK);
  }
  ~FakeEp0() {
    for (int fd : {events_read_, events_write_, device_read_, device_write_}) ::close(fd);
  }
  // The device's side.
  int read_fd() const { return events_read_; }
  int write_fd() const { return device_write_; }

  void Send(fastboot::ffs::EventType type, fastboot::ffs::Setup setup = {}) {
    uint8_t e[fastboot::ffs::kEventSize] = {};
    e[0] = setup.request_type;
    e[1] = setup.request;
    StoreLE<uint16_t>(e + 2, setup.value);
    StoreLE<uint16_t>(e + 4, setup.index);
    StoreLE<uint16_t>(e + 6, setup.length);
    e[8] = static_cast<uint8_t>(type);
    if (::write(events_write_, e, sizeof e) != sizeof e) std::abort();
  }
  void SendRaw(std::string_view bytes) {
    if (::write(events_write_, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) std::abort();
  }
  // What the device wrote so far.
  std::vector<uint8_t> Written() {
    std::vector<uint8_t> out;
    uint8_t buf[4096];
    ssize_t n;
    while ((n = ::read(device_read_, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
    return out;
  }

 private:
  int events_read_, events_write_, device_read_, device_write_;
};

}  // namespace flashpipe::testing
