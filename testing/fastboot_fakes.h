// Fakes for fastboot tests and the protocol fuzzer (header-only, links only
// flashpipe_io):
//
//   MemQueue       an IoQueue over a byte vector; every op must fall inside
//                  one of the allowed windows (the partitions), otherwise it
//                  is recorded as a violation (or aborts, for the fuzzer).
//                  Counts syncs and the bytes written since the last one,
//                  logs every read (reads());
//                  Hold() makes writes block until Release() (another thread).
//   ScriptedConnection  a Connection that replays scripted commands and data
//                  and records every response; Stall() is a client that
//                  goes silent (reads wait for the session's deadline),
//                  SetDelay() one that trickles, SetGone() one that left.
//                  The device's data phases (fetch, upload) are recorded
//                  in data(); a phase longer or shorter than announced
//                  aborts (the transport contract).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "fastboot/connection.h"
#include "io/io_queue.h"
#include "wire/protocol.h"

namespace flashpipe::testing {

class MemQueue final : public io::IoQueue {
 public:
  explicit MemQueue(size_t size, uint8_t fill = 0) : disk_(size, fill) {}

  void Allow(uint64_t offset, uint64_t length) { windows_.emplace_back(offset, offset + length); }
  void AbortOnViolation(bool on) { abort_ = on; }
  const std::vector<std::string>& violations() const { return violations_; }
  std::vector<uint8_t>& disk() { return disk_; }
  uint64_t bytes_written() const { return bytes_written_; }
  // Every read as [offset, offset + length), in submission order.
  const std::vector<std::pair<uint64_t, uint64_t>>& reads() const { return reads_; }
  void ClearReads() { reads_.clear(); }
  int syncs() const { std::lock_guard l(mu_); return syncs_; }
  uint64_t unsynced_bytes() const { std::lock_guard l(mu_); return unsynced_; }
  void Hold() { std::lock_guard l(mu_); held_ = true; }
  void Release() {
    { std::lock_guard l(mu_); held_ = false; }
    cv_.notify_all();
  }

  std::string_view name() const override { return "mem"; }
  unsigned depth() const override { return 8; }
  unsigned in_flight() const override { return static_cast<unsigned>(done_.size()); }

  Status Submit(const io::IoOp& op) override {
    io::IoCompletion c{op.tag, Run(op)};
    done_.push_back(std::move(c));
    return Status::Ok();
  }
  Result<io::IoCompletion> Wait() override {
    io::IoCompletion c = std::move(done_.front());
    done_.pop_front();
    return c;
  }
  Status Sync() override {
    std::lock_guard l(mu_);
    ++syncs_;
    unsynced_ = 0;
    return Status::Ok();
  }

 private:
  Status Run(const io::IoOp& op) {
    bool inside = std::any_of(windows_.begin(), windows_.end(), [&](const auto& w) {
      return op.offset >= w.first && op.length <= w.second - std::min(w.second, op.offset) &&
             op.offset + op.length <= w.second;
    });
    if (op.kind != io::OpKind::kRead && !inside) {
      std::string v = "op kind " + std::to_string(static_cast<int>(op.kind)) + " at " +
                      std::to_string(op.offset) + "+" + std::to_string(op.length) + " outside every partition";
      if (abort_) {
        std::fprintf(stderr, "MemQueue: %s\n", v.c_str());
        std::abort();
      }
      violations_.push_back(v);
    }
    if (op.offset > disk_.size() || op.length > disk_.size() - op.offset) {
      return IoError("mem: op beyond the end of the disk", EIO);
    }
    uint8_t* at = disk_.data() + op.offset;
    if (op.kind != io::OpKind::kRead) {
      std::unique_lock l(mu_);
      cv_.wait(l, [this] { return !held_; });
      unsynced_ += op.length;
    }
    switch (op.kind) {
      case io::OpKind::kWrite: std::memcpy(at, op.buf, op.length); bytes_written_ += op.length; break;
      case io::OpKind::kRead:
        std::memcpy(op.buf, at, op.length);
        reads_.emplace_back(op.offset, op.offset + op.length);
        break;
      case io::OpKind::kZeroOut:
      case io::OpKind::kPunchHole:
      case io::OpKind::kDiscard: std::memset(at, 0, op.length); break;
    }
    return Status::Ok();
  }

  std::vector<uint8_t> disk_;
  std::vector<std::pair<uint64_t, uint64_t>> windows_;
  std::deque<io::IoCompletion> done_;
  std::vector<std::string> violations_;
  std::vector<std::pair<uint64_t, uint64_t>> reads_;
  uint64_t bytes_written_ = 0;
  bool abort_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int syncs_ = 0;
  uint64_t unsynced_ = 0;
  bool held_ = false;
};

class ScriptedConnection final : public fastboot::StreamConnection {
 public:
  ScriptedConnection& Command(std::string c) { in_.push_back({Kind::kCommand, std::move(c)}); return *this; }
  ScriptedConnection& Data(std::string_view bytes) { in_.push_back({Kind::kData, std::string(bytes)}); return *this; }
  ScriptedConnection& Data(const std::vector<uint8_t>& bytes) {
    return Data(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  // The client goes away here.
  ScriptedConnection& Close() { in_.push_back({Kind::kClose, {}}); return *this; }
  // The client sends nothing more: every read waits for the deadline the
  // session set and fails with kTimedOut (kCancelled when there is none).
  ScriptedConnection& Stall() { in_.push_back({Kind::kStall, {}}); return *this; }
  // At most this many bytes per ReadData call (to test slicing).
  void SetMaxSlice(size_t n) { max_slice_ = n; }
  // Each ReadData call first sleeps this long (a slow client).
  void SetDelay(std::chrono::milliseconds d) { delay_ = d; }
  // What ClientGone() answers (any thread).
  void SetGone(bool gone) { gone_ = gone; }
  bool ClientGone() override { return gone_; }

  // The largest data phase (max_data()); SendData fails as a client gone
  // once this many bytes of data went out in all.
  void SetMaxData(uint64_t n) { max_data_ = n; }
  void SetDataGoneAfter(uint64_t n) { data_gone_after_ = n; }
  // Every data phase's bytes, concatenated; how many phases began.
  const std::string& data() const { return data_; }
  int data_phases() const { return data_phases_; }

  const std::vector<std::string>& sent() const { return sent_; }
  // The OKAY and FAIL responses, in order (no INFO, no DATA).
  std::vector<std::string> Finals() const {
    std::vector<std::string> out;
    for (const auto& s : sent_)
      if (s.rfind("INFO", 0) != 0 && s.rfind("DATA", 0) != 0) out.push_back(s);
    return out;
  }
  std::vector<std::string> Infos() const {
    std::vector<std::string> out;
    for (const auto& s : sent_)
      if (s.rfind("INFO", 0) == 0) out.push_back(s.substr(4));
    return out;
  }
  void ClearSent() { sent_.clear(); }

  uint64_t max_data() const override { return max_data_; }
  Status BeginData(uint64_t total) override {
    if (total == 0 || total > max_data_ || data_left_ != 0) std::abort();  // the contract
    data_left_ = total;
    ++data_phases_;
    return Status::Ok();
  }
  Status SendData(std::span<const uint8_t> bytes) override {
    if (bytes.size() > data_left_) std::abort();  // longer than announced
    if (data_.size() + bytes.size() > data_gone_after_) return Cancelled("script: gone in the data phase");
    data_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    data_left_ -= bytes.size();
    return Status::Ok();
  }

  Result<std::string> ReadCommand(size_t max_size) override {
    if (data_left_ != 0) std::abort();  // a data phase left short
    if (!in_.empty() && in_.front().kind == Kind::kStall) return WaitForDeadline();
    if (in_.empty() || in_.front().kind == Kind::kClose) return Cancelled("script: closed");
    Item item = std::move(in_.front());
    in_.pop_front();
    if (item.bytes.size() > max_size) return InvalidArgument("command of " + std::to_string(item.bytes.size()) + " bytes");
    return item.bytes;
  }
  Result<size_t> ReadData(std::span<uint8_t> out) override {
    if (!in_.empty() && in_.front().kind == Kind::kStall) return WaitForDeadline();
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    if (in_.empty() || in_.front().kind != Kind::kData) return Cancelled("script: no data");
    Item& item = in_.front();
    size_t n = std::min({out.size(), item.bytes.size() - offset_, max_slice_});
    std::memcpy(out.data(), item.bytes.data() + offset_, n);
    offset_ += n;
    if (offset_ == item.bytes.size()) {
      in_.pop_front();
      offset_ = 0;
    }
    return n;
  }
  Status Send(std::string_view message) override {
    if (message.size() > wire::kMaxResponse) std::abort();  // the contract
    if (data_left_ != 0 && !message.starts_with("DATA")) std::abort();  // a response inside a data phase
    sent_.emplace_back(message);
    return Status::Ok();
  }
  std::string peer() const override { return "script"; }

 private:
  Status WaitForDeadline() {
    if (deadline() == Deadline::max()) return Cancelled("script: stalled without a deadline");
    std::this_thread::sleep_until(deadline());
    return TimedOut("script: deadline");
  }

  enum class Kind { kCommand, kData, kClose, kStall };
  struct Item {
    Kind kind;
    std::string bytes;
  };
  std::deque<Item> in_;
  size_t offset_ = 0;
  size_t max_slice_ = SIZE_MAX;
  std::chrono::milliseconds delay_{0};
  std::atomic<bool> gone_{false};
  std::vector<std::string> sent_;
  uint64_t max_data_ = UINT32_MAX;
  uint64_t data_gone_after_ = UINT64_MAX;
  uint64_t data_left_ = 0;
  int data_phases_ = 0;
  std::string data_;
};

}  // namespace flashpipe::testing
