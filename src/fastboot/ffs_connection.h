// FfsConnection: fastboot over the two bulk endpoints of a USB function
// (FunctionFS on a device, a fake in tests), for one host at a time.
//
// Commands: each is one bulk OUT transfer, read with one request of the
// packet size (64/512/1024): a command (<= 64 bytes) always ends with a
// short packet, or fills a full-speed packet exactly. A longer transfer is
// answered with one FAIL: its first packet is reported as an over-long
// command, and the rest of it is dropped until it ends (a short packet, or
// 100 ms without a packet: whole packets have no end on the wire).
// Responses: one bulk IN transfer each, plus a zero-length packet when the
// response fills whole packets (64 bytes at full speed), submitted without
// waiting for the host to take them; at most a few wait at once.
//
// Data phase: reads go straight into the download buffer (DownloadTarget),
// several in flight, each a multiple of the packet size except the last of
// the download (a request that ends mid-packet would overflow). Only the
// target's settled() bytes get several reads; past them one read at a time,
// so a gap the target inserts never moves bytes a queued read will fill.
// A read that completes short (the host ended a transfer early) leaves the
// later reads' bytes higher than their place: they are moved down before
// the target sees them; nothing else is copied.
//
// Device data phase (fetch, upload): bulk IN writes of read_size bytes, a
// few in flight, collected from SendData's slices so that every write but
// the last is whole packets: a short packet would end the host's read early.
// No zero-length packet after it: the host reads exactly the announced size,
// and a stray one would be read as an empty response.
//
// The host is gone when ep0 says so (HostGone, from the server's ep0
// thread), when a request fails, when a download gets no data for
// data_timeout, or when a response waits write_timeout for the host: every
// wait then ends with kCancelled. Requests into a download buffer are
// always given back (cancelled and reaped) before ReceiveDownload returns.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fastboot/connection.h"
#include "fastboot/usb_endpoints.h"

namespace flashpipe::fastboot {

struct UsbOptions {
  uint32_t read_size = 256 << 10;  // bytes per data-phase read (rounded down to packets)
  unsigned read_depth = 8;         // data-phase reads in flight
  unsigned max_writes = 16;        // responses waiting for the host
  std::chrono::milliseconds data_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};
};

class FfsConnection final : public Connection {
 public:
  FfsConnection(BulkEndpoints* endpoints, UsbOptions options);

  // A host enabled the function: learns the packet size. REQUIRES: nothing
  // queued (Drain() after the last host).
  Status Start(std::string peer);
  // Waits until the next command has arrived, without taking it (the server
  // takes the device only then). kCancelled: host gone, or Interrupt().
  Status WaitCommand();

  Result<std::string> ReadCommand(size_t max_size) override;
  Status ReceiveDownload(DownloadTarget& target) override;
  Status Send(std::string_view message) override;
  std::string peer() const override { return peer_; }
  bool ClientGone() override { return gone(); }
  uint64_t max_data() const override { return UINT32_MAX; }
  Status BeginData(uint64_t total) override;
  Status SendData(std::span<const uint8_t> bytes) override;

  // Waits until the host took every response (bounded by write_timeout).
  Status Flush();
  // Cancels every queued request and waits until all have completed.
  void Drain();

  // Thread-safe. Ends a wait for a command with kCancelled when the
  // transport is in one and nothing has arrived; returns whether it did.
  bool InterruptIfIdle();
  // Thread-safe: ep0 saw the host go (DISABLE, UNBIND).
  void HostGone();

  uint32_t max_packet() const { return mps_; }
  // The host is gone (or stopped taking responses) since Start().
  bool gone() { return !CheckHost().ok(); }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Kind { kCommand, kData, kWrite };
  struct Request {
    Kind kind;
    uint8_t* buf = nullptr;  // reads
    size_t len = 0;
    Clock::time_point deadline{};  // writes
    std::optional<int64_t> result;  // data reads, until taken
  };

  Status SubmitRead(Kind kind, uint8_t* buf, size_t len, uint64_t* tag);
  Status SubmitWrite(std::string_view bytes, uint64_t* tag);
  Status ReceiveWindows(DownloadTarget& target);
  Result<int64_t> WaitData(uint64_t tag);
  // Reaps what completed, waiting at most `wait`; kCancelled once the host
  // is gone (or a response is overdue). Collect() reaps without judging.
  Status Pump(std::chrono::milliseconds wait);
  Status Collect(std::chrono::milliseconds wait);
  Status CheckHost();
  void CommandArrived(const Request& read, int64_t result);
  void CancelAll(Kind kind);
  size_t Queued(Kind kind) const;

  BulkEndpoints* ep_;
  UsbOptions options_;
  std::string peer_ = "usb";
  uint32_t mps_ = 64;
  uint64_t next_tag_ = 1;
  std::map<uint64_t, Request> requests_;
  std::deque<uint64_t> data_reads_;  // in submission order

  uint64_t data_left_ = 0;  // of the device's data phase, not yet given to SendData
  std::string data_stage_;  // its next write, filled to whole packets

  std::vector<uint8_t> command_buf_;
  uint64_t command_tag_ = 0;  // the queued command read, 0 when none
  std::optional<Result<std::string>> command_;  // arrived, not yet taken
  bool skipping_ = false;        // dropping the rest of an over-long transfer
  Clock::time_point skip_seen_;  // its last packet
  Status error_;                 // sticky: why the host is gone

  std::mutex mu_;  // guards the two flags below with InterruptIfIdle
  bool waiting_ = false;
  bool interrupt_ = false;
  std::atomic<uint64_t> gone_count_{0};
  uint64_t gone_seen_ = 0;
};

}  // namespace flashpipe::fastboot
