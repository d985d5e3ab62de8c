// BulkEndpoints: the bulk OUT (host to device) and bulk IN endpoints of a
// USB function, driven asynchronously: reads and writes are submitted,
// several at a time, and their completions reaped later, so the host never
// waits for the device to post its next read.
//
// Semantics are those of a USB device controller: a read of N bytes
// completes when N bytes arrived or the host ended a transfer with a short
// packet (so it may complete with fewer); a packet that does not fit the
// rest of a read fails it with -EOVERFLOW; reads complete in the order they
// were submitted. When the host goes away (disable, unbind, reset) every
// queued request completes with an error (-ESHUTDOWN, -ECONNRESET, ...).
//
// A read's buffer belongs to the endpoint until the read completes; write
// data is copied at submission. Cancel() asks for a queued request back
// early: it still completes (with its result, or an error) and must be
// reaped. Implementations: AioEndpoints (FunctionFS endpoint files, Linux
// AIO; ffs_aio.h) and FakeEndpoints (testing/fake_ffs.h). One thread drives
// an endpoint pair; Wake() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace flashpipe::fastboot {

struct EndpointDone {
  uint64_t tag;
  int64_t result;  // bytes moved, or -errno
};

class BulkEndpoints {
 public:
  virtual ~BulkEndpoints() = default;
  virtual Status SubmitRead(std::span<uint8_t> buf, uint64_t tag) = 0;
  virtual Status SubmitWrite(std::span<const uint8_t> data, uint64_t tag) = 0;
  // Appends the completions there are, waiting up to `timeout` (or until
  // Wake()) for the first one. Returning none is not an error.
  virtual Status Reap(std::vector<EndpointDone>* done, std::chrono::milliseconds timeout) = 0;
  virtual void Cancel(uint64_t tag) = 0;
  virtual void Wake() = 0;
  // wMaxPacketSize at the speed the host chose (64, 512 or 1024); known
  // once the function is enabled.
  virtual Result<uint32_t> MaxPacketSize() = 0;
};

}  // namespace flashpipe::fastboot
