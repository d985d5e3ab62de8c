// FakeUsbHandle: a UsbHandle (host/usb_backend.h) with a scripted device
// behind it, for tests of the host's USB transport and its queues
// (header-only).
//
// OUT: every transfer is recorded in order (`out_transfers`, the bytes in
// `out_bytes`). Reap completes the oldest one in flight whole, unless the
// script says otherwise: `fail_out_at` (that transfer, counted from 0,
// comes back with `fail_status`), `out_stall_at` (from that transfer on,
// nothing comes back: the device took nothing), `short_out_at` (that one
// comes back with half its bytes), `busy_above` (Submit says kBusy while
// that many transfers are in flight: usbfs memory used up).
//
// IN: the device's bulk IN writes, in order (`DeviceWrites`): a host
// transfer takes packets (`mps` bytes) until it is full or a write ended
// with a short packet (one that is not a whole number of packets ends the
// host's transfer; a whole one does not, as on the wire). A transfer
// waiting for bytes the device has not written stays in flight; Reap then
// says nothing came (at once: no test waits). `fail_in_at` makes that IN
// transfer fail with `fail_status`.
//
// Cancelled transfers come back first, with kCancelled and no bytes. The
// handle counts what is in flight (`in_flight`, `max_in_flight`) and
// checks the contract: a tag reaped twice or a handle destroyed with
// transfers in flight sets `contract_broken`.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "host/usb_backend.h"

namespace flashpipe::testing {

class FakeUsbHandle : public host::UsbHandle {
 public:
  struct Pending {
    uint64_t tag;
    host::UsbDir dir;
    std::span<uint8_t> buf;
    size_t index;  // per direction, from 0
    bool cancelled = false;
  };

  // Shared with the test after the handle moved into a transport.
  struct Record {
    std::vector<size_t> out_transfers, in_transfers;
    std::vector<uint8_t> out_bytes;
    std::vector<std::string> commands;
    size_t in_flight = 0, max_in_flight = 0, cancels = 0;
    bool contract_broken = false;
  };

  explicit FakeUsbHandle(Record* record) : r_(record) {}
  ~FakeUsbHandle() override {
    if (!pending_.empty()) r_->contract_broken = true;
  }

  // Script.
  std::optional<size_t> fail_out_at, out_stall_at, short_out_at, fail_in_at, busy_above;
  Status fail_status = Cancelled("bulk: the device went away");
  size_t mps = 512;
  std::string response = "OKAY";

  void DeviceWrites(const std::vector<std::vector<uint8_t>>& writes) {
    for (const auto& w : writes) {
      stream_.insert(stream_.end(), w.begin(), w.end());
      if (w.size() % mps != 0) ends_.push_back(stream_.size());
    }
  }
  // Bytes the device wrote that no transfer took.
  size_t unread() const { return stream_.size() - read_; }

  Result<size_t> Out(std::span<const uint8_t> data, std::chrono::milliseconds) override {
    r_->commands.emplace_back(reinterpret_cast<const char*>(data.data()), data.size());
    return data.size();
  }
  Result<size_t> In(std::span<uint8_t> buf, std::chrono::milliseconds) override {
    size_t n = std::min(buf.size(), response.size());
    std::memcpy(buf.data(), response.data(), n);
    return n;
  }

  Result<uint64_t> Submit(host::UsbDir dir, std::span<uint8_t> buf) override {
    if (busy_above && r_->in_flight >= *busy_above) return Busy("usb: the kernel's memory is used up");
    bool out = dir == host::UsbDir::kOut;
    if (buf.empty()) r_->contract_broken = true;  // never a zero-length packet
    (out ? r_->out_transfers : r_->in_transfers).push_back(buf.size());
    pending_.push_back({++last_tag_, dir, buf, (out ? out_count_ : in_count_)++});
    r_->max_in_flight = std::max(r_->max_in_flight, ++r_->in_flight);
    return last_tag_;
  }

  Result<std::optional<host::UsbDone>> Reap(std::chrono::milliseconds) override {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->cancelled) return Finish(it, Cancelled("bulk: cancelled"), 0);
    }
    if (pending_.empty()) {
      r_->contract_broken = true;  // nothing in flight: a real Reap would only wait
      return std::optional<host::UsbDone>();
    }
    auto it = pending_.begin();
    return it->dir == host::UsbDir::kOut ? CompleteOut(it) : CompleteIn(it);
  }

  void Cancel(uint64_t tag) override {
    for (Pending& p : pending_) {
      if (p.tag == tag && !p.cancelled) {
        p.cancelled = true;
        ++r_->cancels;
      }
    }
  }

 private:
  using It = std::deque<Pending>::iterator;

  Result<std::optional<host::UsbDone>> Finish(It it, Status st, size_t actual) {
    host::UsbDone d{it->tag, std::move(st), actual};
    pending_.erase(it);
    --r_->in_flight;
    return std::optional<host::UsbDone>(std::move(d));
  }

  Result<std::optional<host::UsbDone>> CompleteOut(It it) {
    if (out_stall_at && it->index >= *out_stall_at) return std::optional<host::UsbDone>();
    if (fail_out_at && it->index == *fail_out_at) return Finish(it, fail_status, 0);
    size_t n = short_out_at && it->index == *short_out_at ? it->buf.size() / 2 : it->buf.size();
    r_->out_bytes.insert(r_->out_bytes.end(), it->buf.begin(), it->buf.begin() + n);
    return Finish(it, Status::Ok(), n);
  }

  Result<std::optional<host::UsbDone>> CompleteIn(It it) {
    if (fail_in_at && it->index == *fail_in_at) return Finish(it, fail_status, 0);
    size_t want = it->buf.size();
    size_t end = stream_.size();
    bool short_end = false;  // a short packet ends the transfer there
    for (size_t e : ends_) {
      if (e > read_) {
        end = e;
        short_end = true;
        break;
      }
    }
    size_t n = std::min(want, end - read_);
    if (n == 0 || (n < want && !short_end)) return std::optional<host::UsbDone>();  // waits for more packets
    std::memcpy(it->buf.data(), stream_.data() + read_, n);
    read_ += n;
    return Finish(it, Status::Ok(), n);
  }

  Record* r_;
  std::deque<Pending> pending_;
  uint64_t last_tag_ = 0;
  size_t out_count_ = 0, in_count_ = 0;
  std::vector<uint8_t> stream_;
  std::vector<size_t> ends_;  // stream offsets where a short packet ended a write
  size_t read_ = 0;
};

}  // namespace flashpipe::testing
