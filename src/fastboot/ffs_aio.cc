#include "fastboot/ffs_aio.h"

#include <fcntl.h>
#include <linux/usb/functionfs.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "base/endian.h"
#include "base/fd_io.h"

namespace flashpipe::fastboot {
namespace {

long IoSetup(unsigned nr, aio_context_t* ctx) { return ::syscall(SYS_io_setup, nr, ctx); }
long IoDestroy(aio_context_t ctx) { return ::syscall(SYS_io_destroy, ctx); }
long IoSubmit(aio_context_t ctx, long n, iocb** cbs) { return ::syscall(SYS_io_submit, ctx, n, cbs); }
long IoCancel(aio_context_t ctx, iocb* cb, io_event* result) { return ::syscall(SYS_io_cancel, ctx, cb, result); }
long IoGetevents(aio_context_t ctx, long min, long max, io_event* events, timespec* timeout) {
  return ::syscall(SYS_io_getevents, ctx, min, max, events, timeout);
}

Result<UniqueFd> OpenEndpoint(const std::string& path) {
  int fd = RetryOnEintr([&] { return ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC); });
  if (fd < 0) return ErrnoError("open " + path);
  return UniqueFd(fd);
}

}  // namespace

Result<std::unique_ptr<AioEndpoints>> AioEndpoints::Create(UniqueFd out, UniqueFd in, unsigned max_requests) {
  std::unique_ptr<AioEndpoints> e(new AioEndpoints());
  e->out_ = std::move(out);
  e->in_ = std::move(in);
  e->max_requests_ = max_requests;
  e->event_fd_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!e->event_fd_.valid()) return ErrnoError("eventfd");
  if (IoSetup(max_requests, &e->ctx_) != 0) return ErrnoError(fmt::format("io_setup({})", max_requests));
  return e;
}

Result<std::unique_ptr<AioEndpoints>> AioEndpoints::Open(const std::string& ffs_dir, unsigned max_requests) {
  FP_ASSIGN_OR_RETURN(UniqueFd out, OpenEndpoint(ffs_dir + "/ep1"));
  FP_ASSIGN_OR_RETURN(UniqueFd in, OpenEndpoint(ffs_dir + "/ep2"));
  return Create(std::move(out), std::move(in), max_requests);
}

AioEndpoints::~AioEndpoints() {
  // Cancels every queued request and waits for them all.
  if (ctx_ != 0) (void)IoDestroy(ctx_);
}

Status AioEndpoints::Submit(int fd, uint16_t opcode, uint64_t buf, size_t len, uint64_t tag) {
  if (queued_.size() >= max_requests_) {
    return Internal(fmt::format("usb: {} requests already queued", queued_.size()));
  }
  auto cb = std::make_unique<iocb>();
  std::memset(cb.get(), 0, sizeof *cb);
  cb->aio_data = tag;
  cb->aio_fildes = static_cast<uint32_t>(fd);
  cb->aio_lio_opcode = opcode;
  cb->aio_buf = buf;
  cb->aio_nbytes = len;
  cb->aio_flags = IOCB_FLAG_RESFD;
  cb->aio_resfd = static_cast<uint32_t>(event_fd_.get());
  iocb* list[1] = {cb.get()};
  if (RetryOnEintr([&] { return IoSubmit(ctx_, 1, list); }) != 1) {
    return ErrnoError(fmt::format("usb: submit {} of {} bytes", opcode == IOCB_CMD_PREAD ? "read" : "write", len));
  }
  queued_[tag] = std::move(cb);
  return Status::Ok();
}

Status AioEndpoints::SubmitRead(std::span<uint8_t> buf, uint64_t tag) {
  return Submit(out_.get(), IOCB_CMD_PREAD, reinterpret_cast<uintptr_t>(buf.data()), buf.size(), tag);
}

Status AioEndpoints::SubmitWrite(std::span<const uint8_t> data, uint64_t tag) {
  return Submit(in_.get(), IOCB_CMD_PWRITE, reinterpret_cast<uintptr_t>(data.data()), data.size(), tag);
}

Status AioEndpoints::Reap(std::vector<EndpointDone>* done, std::chrono::milliseconds timeout) {
  pollfd p{event_fd_.get(), POLLIN, 0};
  int r = RetryOnEintr([&] { return ::poll(&p, 1, static_cast<int>(timeout.count())); });
  if (r < 0) return ErrnoError("usb: poll");
  uint64_t count;
  (void)!::read(event_fd_.get(), &count, sizeof count);  // resets it; EAGAIN when only polled out
  io_event events[64];
  timespec zero{};
  for (;;) {
    long n = RetryOnEintr([&] { return IoGetevents(ctx_, 0, std::size(events), events, &zero); });
    if (n < 0) return ErrnoError("usb: io_getevents");
    for (long i = 0; i < n; ++i) {
      queued_.erase(events[i].data);
      done->push_back({events[i].data, events[i].res});
    }
    if (n < static_cast<long>(std::size(events))) return Status::Ok();
  }
}

void AioEndpoints::Cancel(uint64_t tag) {
  auto it = queued_.find(tag);
  if (it == queued_.end()) return;
  io_event ignored;
  // EINPROGRESS: the completion comes through the ring; EAGAIN/EINVAL: it
  // completed already or cannot be cancelled and completes on its own.
  (void)IoCancel(ctx_, it->second.get(), &ignored);
}

void AioEndpoints::Wake() {
  uint64_t one = 1;
  (void)!::write(event_fd_.get(), &one, sizeof one);
}

Result<uint32_t> AioEndpoints::MaxPacketSize() {
  // The kernel copies a whole usb_endpoint_descriptor (9 bytes with the
  // audio fields) for the current speed.
  uint8_t desc[USB_DT_ENDPOINT_AUDIO_SIZE] = {};
  if (::ioctl(out_.get(), FUNCTIONFS_ENDPOINT_DESC, desc) != 0) return ErrnoError("usb: FUNCTIONFS_ENDPOINT_DESC");
  uint32_t mps = LoadLE<uint16_t>(desc + 4) & 0x7ff;
  if (mps == 0) return Corrupt("usb: endpoint with wMaxPacketSize 0");
  return mps;
}

}  // namespace flashpipe::fastboot
