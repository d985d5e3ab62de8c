// FakeFastbootDevice: a fastboot device in memory behind the host's
// Transport interface, for tests of src/host without sockets. It answers
// getvar (max-download-size, current-slot, slot-count, has-slot:P,
// is-logical:P, partition-size:P, serialno, product), download (DATA, then
// OKAY once every byte came; FAIL above max-download-size or when locked),
// flash (the download laid over the partition: sparse decoded strictly, raw
// written at 0; FAIL when it does not fit), erase, set_active,
// resize-logical-partition, reboot*, flashing lock|unlock. When configured
// it also answers `oem digest PART:OFFSET:SIZE` (flashpipe serve's two
// sha256 INFO halves) and `fetch:PART:OFFSET:SIZE` (DATA, the bytes through
// ReceiveData, OKAY; getvar max-fetch-size when max_fetch is set, and a
// fetch above it FAILs), and it can misbehave: flip one byte of a partition
// after every flash (corrupt_at), announce a fetch's DATA with a size off
// by fetch_skew, or end a fetch's bytes with FAIL (fetch_fail). With
// `stream` it takes stream-flash:PART (the next download is PART's; its
// flash must name PART). It can be slow (a delay per data send) or vanish after
// some data bytes (every call then fails as a closed connection would).
// Every command is logged. One thread at a time; inspect after the run.
// Header-only.
#pragma once

#include <atomic>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/sha256.h"
#include "host/transport.h"
#include "testing/host_images.h"
#include "wire/protocol.h"

namespace flashpipe::testing {

struct FakeDeviceConfig {
  std::string serial = "fake";
  uint64_t max_download = 1 << 20;
  std::string current_slot = "a";
  int slot_count = 2;
  std::set<std::string> logical;
  bool locked = false;
  // Called before each SendData with the data bytes taken so far (a test
  // holds a device here to make it slow).
  std::function<void(uint64_t)> before_data;
  uint64_t vanish_after = UINT64_MAX;  // data bytes
  bool partition_size = true;  // answers getvar partition-size:P (false: "unknown variable", as for any other)
  bool digest = false;         // answers oem digest
  bool fetch = false;          // answers fetch:
  uint64_t max_fetch = 0;      // getvar max-fetch-size (0: "unknown variable"); a larger fetch FAILs
  int64_t fetch_skew = 0;      // fetch: announces DATA of the size asked + this
  std::string fetch_fail;      // fetch: after the bytes, FAIL with this (a medium that failed mid-read)
  uint64_t corrupt_at = UINT64_MAX;  // after each flash, this byte of the partition is flipped
  bool stream = false;  // answers getvar stream-flash yes and stream-flash:P (serve's extension)
  std::set<std::string> stream_refused;  // stream-flash:P FAILs for these (serve's `gpt` table)
};

class FakeFastbootDevice : public host::Transport {
 public:
  explicit FakeFastbootDevice(FakeDeviceConfig config = {}) : config_(std::move(config)) {}

  void AddPartition(const std::string& name, size_t size, uint8_t fill = 0xDC) {
    partitions[name] = std::vector<uint8_t>(size, fill);
  }

  Status Send(std::string_view command) override {
    if (gone_) return Cancelled("connection closed");
    commands.emplace_back(command);
    Handle(std::string(command));
    return Status::Ok();
  }

  Result<std::string> Receive() override {
    if (gone_) return Cancelled("connection closed");
    if (out_.empty() && upload_pos_ < upload_.size()) {
      return ProtocolError(fmt::format("fake: {} data bytes not read", upload_.size() - upload_pos_));
    }
    if (out_.empty()) return TimedOut("fake: nothing to say");
    std::string m = out_.front();
    out_.pop_front();
    return m;
  }

  Status SendData(std::span<const std::span<const uint8_t>> pieces) override {
    if (gone_) return Cancelled("connection reset");
    if (config_.before_data) config_.before_data(data_bytes);
    for (auto p : pieces) {
      if (data_bytes + p.size() > config_.vanish_after) {
        gone_ = true;
        return Cancelled("connection reset by peer");
      }
      data_bytes += p.size();
      download_.insert(download_.end(), p.begin(), p.end());
    }
    if (download_.size() > expected_) return Corrupt("fake: more data than announced");
    if (download_.size() == expected_ && expected_ > 0) {
      out_.push_back(wire::Okay());
      expected_ = 0;
    }
    return Status::Ok();
  }

  Status ReceiveData(std::span<uint8_t> buf) override {
    if (gone_) return Cancelled("connection closed");
    if (buf.empty()) return Status::Ok();
    largest_receive = std::max(largest_receive, buf.size());
    if (upload_.size() - upload_pos_ < buf.size()) return TimedOut("fake: no more data to send");
    std::memcpy(buf.data(), upload_.data() + upload_pos_, buf.size());
    upload_pos_ += buf.size();
    fetched_bytes += buf.size();
    if (upload_pos_ == upload_.size()) Say(config_.fetch_fail.empty() ? wire::Okay() : wire::Fail(config_.fetch_fail));
    return Status::Ok();
  }

  std::string name() const override { return "fake:" + config_.serial; }

  // Back after vanishing (plugged in again): talks again, no download pending.
  void Revive() {
    gone_ = false;
    config_.vanish_after = UINT64_MAX;
    out_.clear();
    download_.clear();
    upload_.clear();
    upload_pos_ = 0;
    expected_ = 0;
  }

  std::map<std::string, std::vector<uint8_t>> partitions;
  std::vector<std::string> commands;
  std::atomic<uint64_t> data_bytes{0};  // read by tests while another thread sends
  uint64_t fetched_bytes = 0;           // sent back through ReceiveData
  size_t largest_receive = 0;           // the most one ReceiveData asked for
  bool gone() const { return gone_; }
  const FakeDeviceConfig& config() const { return config_; }

 private:
  void Say(std::string m) { out_.push_back(std::move(m)); }
  std::string stream_next_, streamed_to_;  // stream-flash: for the next download, for the last one

  bool Slotted(const std::string& p) const { return partitions.count(p + "_a") > 0; }

  void GetVar(const std::string& v) {
    auto after = [&](std::string_view prefix) { return v.substr(prefix.size()); };
    if (v == "max-download-size") return Say(wire::Okay(wire::Hex32(static_cast<uint32_t>(config_.max_download))));
    if (v == "current-slot") return Say(wire::Okay(config_.current_slot));
    if (v == "slot-count") return Say(wire::Okay(std::to_string(config_.slot_count)));
    if (v == "serialno") return Say(wire::Okay(config_.serial));
    if (v == "product") return Say(wire::Okay("fakeboard"));
    if (v.starts_with("has-slot:")) return Say(wire::Okay(Slotted(after("has-slot:")) ? "yes" : "no"));
    if (v.starts_with("is-logical:")) return Say(wire::Okay(config_.logical.count(after("is-logical:")) ? "yes" : "no"));
    if (v == "stream-flash" && config_.stream) return Say(wire::Okay("yes"));
    if (v == "max-fetch-size" && config_.fetch && config_.max_fetch > 0) {
      return Say(wire::Okay(wire::Hex32(static_cast<uint32_t>(config_.max_fetch))));
    }
    if (v.starts_with("partition-size:") && config_.partition_size) {
      auto it = partitions.find(after("partition-size:"));
      if (it == partitions.end()) return Say(wire::Fail("no such partition"));
      return Say(wire::Okay(wire::Hex64(it->second.size())));
    }
    Say(wire::Fail("unknown variable"));
  }

  void Handle(const std::string& cmd) {
    auto c = wire::ParseCommand(cmd);
    if (!c.ok()) return Say(wire::Fail(c.status().message()));
    const std::string& arg = c->arg;
    bool mutating = c->name == "download" || c->name == "flash" || c->name == "erase" || c->name == "set_active" ||
                    c->name == "stream-flash";
    if (mutating && config_.locked) return Say(wire::Fail(c->name + ": device is locked"));
    if (c->name == "getvar") return GetVar(arg);
    if (c->name == "download") {
      auto n = wire::ParseDownloadSize(arg);
      if (!n.ok()) return Say(wire::Fail(n.status().message()));
      if (*n > config_.max_download) return Say(wire::Fail("download above max-download-size"));
      download_.clear();
      expected_ = *n;
      streamed_to_ = std::exchange(stream_next_, std::string());
      return Say(wire::Data(*n));
    }
    if (c->name == "stream-flash" && config_.stream) {
      if (partitions.find(arg) == partitions.end() || config_.stream_refused.count(arg) > 0) {
        return Say(wire::Fail("partition '" + arg + "' not found"));
      }
      stream_next_ = arg;
      return Say(wire::Okay());
    }
    if (c->name == "flash") {
      auto it = partitions.find(arg);
      if (it == partitions.end()) return Say(wire::Fail("partition '" + arg + "' not found"));
      if (!streamed_to_.empty() && streamed_to_ != arg) return Say(wire::Fail("download went to " + streamed_to_));
      std::vector<uint8_t> before = it->second;
      Status st = Overlay(&it->second, download_);
      if (st.ok() && it->second.size() != before.size()) st = NoSpace("image larger than the partition");
      if (!st.ok()) {
        it->second = std::move(before);
        return Say(wire::Fail(st.message()));
      }
      ++flashes[arg];
      if (config_.corrupt_at < it->second.size()) it->second[config_.corrupt_at] ^= 0xFF;
      return Say(wire::Okay());
    }
    if (c->name == "erase") {
      auto it = partitions.find(arg);
      if (it == partitions.end()) return Say(wire::Fail("partition '" + arg + "' not found"));
      std::fill(it->second.begin(), it->second.end(), 0);
      return Say(wire::Okay());
    }
    if (c->name == "set_active") {
      config_.current_slot = arg;
      return Say(wire::Okay());
    }
    if (c->name == "resize-logical-partition") {
      size_t colon = arg.rfind(':');
      std::string p = arg.substr(0, colon);
      partitions[p].resize(std::stoull(arg.substr(colon + 1)), 0);
      return Say(wire::Okay());
    }
    if (c->name == "flashing") {
      config_.locked = arg == "lock";
      return Say(wire::Okay());
    }
    if (c->name.starts_with("reboot")) return Say(wire::Okay());
    if (c->name == "oem" && arg.starts_with("digest ") && config_.digest) return Digest(arg.substr(7));
    if (c->name == "fetch" && config_.fetch) return Fetch(arg);
    Say(wire::Fail("unknown command"));
  }

  static bool Number(std::string_view text, uint64_t* n) {
    int base = 10;
    if (text.starts_with("0x")) {
      text.remove_prefix(2);
      base = 16;
    }
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *n, base);
    return !text.empty() && ec == std::errc() && end == text.data() + text.size();
  }

  // PART:OFFSET:SIZE (numbers decimal or 0x hex) inside a partition.
  bool Range(const std::string& arg, std::vector<uint8_t>** part, uint64_t* offset, uint64_t* size) {
    size_t a = arg.find(':'), b = arg.rfind(':');
    if (a == std::string::npos || a == b) return Say(wire::Fail("want PART:OFFSET:SIZE")), false;
    auto it = partitions.find(arg.substr(0, a));
    if (it == partitions.end()) return Say(wire::Fail("no such partition")), false;
    if (!Number(arg.substr(a + 1, b - a - 1), offset) || !Number(arg.substr(b + 1), size)) {
      return Say(wire::Fail("bad offset or size")), false;
    }
    if (*offset > it->second.size() || *size > it->second.size() - *offset) {
      return Say(wire::Fail("range past the partition's end")), false;
    }
    *part = &it->second;
    return true;
  }

  void Digest(const std::string& arg) {
    std::vector<uint8_t>* part = nullptr;
    uint64_t offset = 0, size = 0;
    if (!Range(arg, &part, &offset, &size)) return;
    Sha256 h;
    h.Update(std::span<const uint8_t>(part->data() + offset, size));
    std::string hex = Sha256::Hex(h.Final());
    Say(wire::Info("sha256 1/2 " + hex.substr(0, 32)));
    Say(wire::Info("sha256 2/2 " + hex.substr(32)));
    Say(wire::Okay());
  }

  void Fetch(const std::string& arg) {
    std::vector<uint8_t>* part = nullptr;
    uint64_t offset = 0, size = 0;
    if (!Range(arg, &part, &offset, &size)) return;
    if (config_.max_fetch > 0 && size > config_.max_fetch) return Say(wire::Fail("above max-fetch-size"));
    uint64_t announced = static_cast<uint64_t>(static_cast<int64_t>(size) + config_.fetch_skew);
    uint64_t n = std::min<uint64_t>(announced, part->size() - offset);
    upload_.assign(part->begin() + static_cast<ptrdiff_t>(offset), part->begin() + static_cast<ptrdiff_t>(offset + n));
    upload_pos_ = 0;
    Say(wire::Data(static_cast<uint32_t>(announced)));  // OKAY once the bytes were read
  }

  FakeDeviceConfig config_;
  std::deque<std::string> out_;
  std::vector<uint8_t> download_;
  uint64_t expected_ = 0;
  std::vector<uint8_t> upload_;  // a fetch's bytes, read from upload_pos_ on
  size_t upload_pos_ = 0;
  bool gone_ = false;

 public:
  std::map<std::string, int> flashes;
};

}  // namespace flashpipe::testing
