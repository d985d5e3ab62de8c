// AioEndpoints: BulkEndpoints over the endpoint files of a FunctionFS
// instance (ep1 = bulk OUT, ep2 = bulk IN), driven with Linux AIO
// (io_submit/io_getevents/io_cancel).
//
// Why Linux AIO and not io_uring: FunctionFS queues an asynchronous read as
// a USB request at submission, so several reads are really outstanding on
// the bus; both interfaces reach that path, but only AIO can take a queued
// request back (io_cancel -> usb_ep_dequeue). The daemon needs that when a
// host stops mid-download or stops reading responses without going away,
// so that no stale read into the download buffer, nor a stale response on
// IN, survives into the next host's session.
//
// The files are opened O_NONBLOCK: a submission while the function is
// disabled fails at once (EAGAIN) instead of blocking in the kernel. The
// destructor cancels what is queued and waits for it (io_destroy), so no
// read can land in a buffer after this object is gone.
#pragma once

#include <linux/aio_abi.h>

#include <map>
#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "fastboot/usb_endpoints.h"

namespace flashpipe::fastboot {

class AioEndpoints final : public BulkEndpoints {
 public:
  // `out` and `in`: the OUT and IN endpoint files, opened O_RDWR|O_NONBLOCK.
  // `max_requests`: how many requests may be queued at once.
  static Result<std::unique_ptr<AioEndpoints>> Create(UniqueFd out, UniqueFd in, unsigned max_requests);
  // Opens DIR/ep1 and DIR/ep2.
  static Result<std::unique_ptr<AioEndpoints>> Open(const std::string& ffs_dir, unsigned max_requests);
  ~AioEndpoints() override;

  Status SubmitRead(std::span<uint8_t> buf, uint64_t tag) override;
  Status SubmitWrite(std::span<const uint8_t> data, uint64_t tag) override;
  Status Reap(std::vector<EndpointDone>* done, std::chrono::milliseconds timeout) override;
  void Cancel(uint64_t tag) override;
  void Wake() override;
  Result<uint32_t> MaxPacketSize() override;

 private:
  AioEndpoints() = default;
  Status Submit(int fd, uint16_t opcode, uint64_t buf, size_t len, uint64_t tag);

  UniqueFd out_, in_;
  UniqueFd event_fd_;  // counts completions (IOCB_FLAG_RESFD) and Wake() calls
  aio_context_t ctx_ = 0;
  unsigned max_requests_ = 0;
  // Queued requests by tag; io_cancel finds a request by its iocb's address.
  std::map<uint64_t, std::unique_ptr<iocb>> queued_;
};

}  // namespace flashpipe::fastboot
