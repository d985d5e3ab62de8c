// FakeFastbootDevice: a fastboot device in memory behind the host's
// Transport interface, for tests of src/host without sockets. It answers
// getvar (max-download-size, current-slot, slot-count, has-slot:P,
// is-logical:P, partition-size:P, serialno, product), download (DATA, then
// OKAY once every byte came; FAIL above max-download-size or when locked),
// flash (the download laid over the partition: sparse decoded strictly, raw
// written at 0; FAIL when it does not fit), erase, set_active,
// resize-logical-partition, reboot*, flashing lock|unlock. It can be slow
// (a delay per data send) or vanish after some data bytes (every call then
// fails as a closed connection would). Every command is logged. One thread
// at a time; inspect after the run. Header-only.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <functional>
#include <string>
#include <thread>
#include <vector>

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

  std::string name() const override { return "fake:" + config_.serial; }

  // Back after vanishing (plugged in again): talks again, no download pending.
  void Revive() {
    gone_ = false;
    config_.vanish_after = UINT64_MAX;
    out_.clear();
    download_.clear();
    expected_ = 0;
  }

  std::map<std::string, std::vector<uint8_t>> partitions;
  std::vector<std::string> commands;
  std::atomic<uint64_t> data_bytes{0};  // read by tests while another thread sends
  bool gone() const { return gone_; }
  const FakeDeviceConfig& config() const { return config_; }

 private:
  void Say(std::string m) { out_.push_back(std::move(m)); }

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
    bool mutating = c->name == "download" || c->name == "flash" || c->name == "erase" || c->name == "set_active";
    if (mutating && config_.locked) return Say(wire::Fail(c->name + ": device is locked"));
    if (c->name == "getvar") return GetVar(arg);
    if (c->name == "download") {
      auto n = wire::ParseDownloadSize(arg);
      if (!n.ok()) return Say(wire::Fail(n.status().message()));
      if (*n > config_.max_download) return Say(wire::Fail("download above max-download-size"));
      download_.clear();
      expected_ = *n;
      return Say(wire::Data(*n));
    }
    if (c->name == "flash") {
      auto it = partitions.find(arg);
      if (it == partitions.end()) return Say(wire::Fail("partition '" + arg + "' not found"));
      std::vector<uint8_t> before = it->second;
      Status st = Overlay(&it->second, download_);
      if (st.ok() && it->second.size() != before.size()) st = NoSpace("image larger than the partition");
      if (!st.ok()) {
        it->second = std::move(before);
        return Say(wire::Fail(st.message()));
      }
      ++flashes[arg];
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
    Say(wire::Fail("unknown command"));
  }

  FakeDeviceConfig config_;
  std::deque<std::string> out_;
  std::vector<uint8_t> download_;
  uint64_t expected_ = 0;
  bool gone_ = false;

 public:
  std::map<std::string, int> flashes;
};

}  // namespace flashpipe::testing
