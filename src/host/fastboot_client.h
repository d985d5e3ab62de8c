// FastbootClient: the fastboot commands as a host sends them, over any
// Transport. A command gets INFO (and TEXT) lines, which go to the info
// callback, then OKAY (its message is the result), FAIL (an error: the
// device refused) or DATA (a download's go-ahead). A download sends the
// data phase through a writer (part_writer.h) and reads the final answer.
//
// Errors keep apart what a report must tell apart (last_failure()): a
// device's FAIL is kUnsupported with "remote: '...'" (kRefused); a silent or
// vanished device, or a response that makes no sense, is the transport's
// error (kGone); an error of the data phase's writer (the image) is kOther.
//
// Fetch reads a partition's bytes back (fastbootd's `fetch:`): the device
// must announce exactly the bytes asked for (DATA%08x of another size is
// kProtocol, and the session is out of step: nothing more can be sent on
// it), then they go to a sink in pieces as they come (at most 1 MiB is held,
// whatever the range's size), then the final OKAY.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "host/part_writer.h"
#include "host/transport.h"

namespace flashpipe::host {

class FastbootClient {
 public:
  using InfoFn = std::function<void(std::string_view)>;
  explicit FastbootClient(std::unique_ptr<Transport> transport, InfoFn info = {});

  // The OKAY message. With `info`, the command's INFO/TEXT lines are kept
  // there instead of going to the info callback (answers such as oem digest).
  Result<std::string> Command(std::string_view command, std::vector<std::string>* info = nullptr);
  Result<std::string> GetVar(std::string_view name) { return Command(std::string("getvar:") + std::string(name)); }
  // download:SIZE, the data phase from `write` (which must send exactly
  // `size` bytes to the DataOut it is given), the final answer.
  Status Download(uint32_t size, const std::function<Status(DataOut&)>& write);

  // fetch:PARTITION:0xOFFSET:0xSIZE (size > 0), each piece to `sink` in
  // order. The device's FAIL to the command is kUnsupported (refused); a
  // FAIL after the data phase (it could not read every byte) is kIoError,
  // still refused(). A sink's error stops the read (kOther; the session is
  // then out of step). Unsupported (kOther) without a command sent when the
  // transport reads no data phases.
  Status Fetch(std::string_view partition, uint64_t offset, uint32_t size,
               const std::function<Status(std::span<const uint8_t>)>& sink);
  // Whether the transport reads data phases from the device (Fetch).
  bool can_fetch() { return transport_->ReceiveData({}).ok(); }
  // Bytes of data phases received so far.
  uint64_t fetched_bytes() const { return fetched_bytes_.load(std::memory_order_relaxed); }

  enum class Failure { kNone, kRefused, kGone, kOther };
  // Where the last error came from (kNone after a success).
  Failure last_failure() const { return failure_; }
  bool refused() const { return failure_ == Failure::kRefused; }
  std::string name() const { return transport_->name(); }
  Transport& transport() { return *transport_; }
  // Bytes of data phases sent so far (any thread may ask).
  uint64_t data_bytes() const { return data_bytes_.load(std::memory_order_relaxed); }

 private:
  class Counter;
  // Reads responses up to the final one.
  Result<std::string> Answer(bool data_ok, uint32_t* data_size, std::vector<std::string>* info = nullptr);
  Status Failed(Status st, Failure why = Failure::kGone);

  std::unique_ptr<Transport> transport_;
  InfoFn info_;
  Failure failure_ = Failure::kNone;
  std::atomic<uint64_t> data_bytes_{0};
  std::atomic<uint64_t> fetched_bytes_{0};
};

// A size variable (max-download-size, partition-size:NAME) as devices
// report it: decimal or 0x hex, spaces around tolerated (as the AOSP client
// does). Anything else ("zz", "-5", 20 hex digits) is an error naming
// `name`, never read as 0 ("no limit").
Result<uint64_t> ParseDeviceSize(std::string_view name, std::string_view value);

}  // namespace flashpipe::host
