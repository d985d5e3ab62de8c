#include "fastboot/usb_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/fd_io.h"
#include "base/log.h"
#include "fastboot/ffs_descriptors.h"
#include "fastboot/session.h"
#include "wire/protocol.h"

namespace flashpipe::fastboot {

Status WriteFunctionDescriptors(int ep0, std::string_view where) {
  // FunctionFS takes each blob in one write(2).
  FP_RETURN_IF_ERROR(WriteAll(ep0, ffs::FastbootDescriptors(), fmt::format("{} (descriptors)", where)));
  return WriteAll(ep0, ffs::FastbootStrings(), fmt::format("{} (strings)", where));
}

UsbServer::UsbServer(FastbootDevice* device, int ep0_read, int ep0_write, BulkEndpoints* endpoints,
                     UsbServerOptions options)
    : device_(device),
      ep0_read_(ep0_read),
      ep0_write_(ep0_write),
      options_(std::move(options)),
      transport_(endpoints, options_.transport),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

UsbServer::~UsbServer() { Stop(); }

void UsbServer::Start() {
  ep0_thread_ = std::thread([this] { Ep0Loop(); });
  session_thread_ = std::thread([this] { SessionLoop(); });
}

void UsbServer::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  stopping_ = true;
  cv_.notify_all();
  uint64_t one = 1;
  (void)!::write(stop_fd_.get(), &one, sizeof one);
  transport_.HostGone();  // ends any wait of the session thread
  if (ep0_thread_.joinable()) ep0_thread_.join();
  if (session_thread_.joinable()) session_thread_.join();
}

bool UsbServer::enabled() const {
  std::lock_guard lock(mu_);
  return enabled_;
}

void UsbServer::Ep0Loop() {
  while (!stopping_) {
    pollfd fds[2] = {{ep0_read_, POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (RetryOnEintr([&] { return ::poll(fds, 2, -1); }) < 0) {
      log::Warn("{}: ep0 poll: {}", options_.name, std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    if (Status st = HandleEvents(); !st.ok()) {
      log::Warn("{}: {}", options_.name, st.ToString());
      if (st.code() != Code::kCorrupt) return;  // ep0 itself failed
    }
  }
}

Status UsbServer::HandleEvents() {
  uint8_t buf[4 * ffs::kEventSize];  // FunctionFS queues at most four
  ssize_t n = RetryOnEintr([&] { return ::read(ep0_read_, buf, sizeof buf); });
  if (n < 0 && (errno == EAGAIN || errno == EIDRM)) return Status::Ok();
  if (n < 0) return ErrnoError("read ep0");
  if (n == 0) return IoError("ep0 closed", 0);
  FP_ASSIGN_OR_RETURN(auto events, ffs::ParseEvents(std::span(buf, static_cast<size_t>(n))));
  for (const ffs::Event& ev : events) {
    ++stats_.events;
    log::Debug("{}: ep0 {}", options_.name, ffs::EventName(ev.type));
    switch (ev.type) {
      case ffs::EventType::kEnable: {
        std::lock_guard lock(mu_);
        enabled_ = true;
        ++epoch_;
        cv_.notify_all();
        break;
      }
      case ffs::EventType::kDisable:
      case ffs::EventType::kUnbind: {
        std::lock_guard lock(mu_);
        if (enabled_) log::Info("{}: host gone ({})", options_.name, ffs::EventName(ev.type));
        enabled_ = false;
        transport_.HostGone();  // under mu_: ordered against Start()
        break;
      }
      case ffs::EventType::kSetup: {
        // Stall: a read answers an IN request, a write an OUT one, with the
        // wrong direction (FunctionFS then halts ep0).
        uint8_t none = 0;
        if (ev.setup.in()) {
          (void)!::read(ep0_read_, &none, 0);
        } else {
          (void)!::write(ep0_write_, &none, 0);
        }
        ++stats_.stalled;
        log::Debug("{}: stalled control request {:02x}/{:02x}", options_.name, ev.setup.request_type, ev.setup.request);
        break;
      }
      default:
        break;  // BIND, SUSPEND, RESUME: queued requests stay queued
    }
  }
  return Status::Ok();
}

void UsbServer::SessionLoop() {
  uint64_t served = 0;
  for (;;) {
    Status st;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || (enabled_ && epoch_ != served); });
      if (stop_) break;
      served = epoch_;
      st = transport_.Start(options_.name);
    }
    if (st.ok()) {
      ++stats_.hosts;
      log::Info("{}: host connected ({}-byte packets)", options_.name, transport_.max_packet());
      ServeHost();
    } else {
      log::Warn("{}: {}", options_.name, st.ToString());
    }
    transport_.Drain();
  }
  transport_.Drain();
}

void UsbServer::ServeHost() {
  const std::string owner = options_.name;
  for (;;) {
    if (!transport_.WaitCommand().ok()) {
      if (transport_.gone()) return;
      continue;  // gave the device away: wait for the next command
    }
    if (!device_->TryAcquire(owner, [this] { return transport_.InterruptIfIdle(); })) {
      std::string busy = fmt::format("busy: another session is active ({})", device_->owner());
      ++stats_.busy;
      log::Info("{}: command refused: {}", owner, busy);
      (void)transport_.ReadCommand(wire::kMaxCommand);
      if (!transport_.Send(wire::Fail(busy)).ok()) return;
      continue;
    }
    ++stats_.sessions;
    log::Debug("{}: session start", owner);
    Session session(device_, &transport_);
    Status st = session.Run();
    device_->Release();
    log::Debug("{}: session end{}{}", owner, st.ok() ? "" : ": ", st.ok() ? "" : st.ToString());
    if (!st.ok()) log::Info("{}: session ended: {}", owner, st.ToString());
    if (session.rebooted() && options_.reenumerate) {
      (void)transport_.Flush();  // the client must get its OKAY first
      log::Info("{}: re-enumerating after reboot", owner);
      options_.reenumerate();
    }
    if (transport_.gone()) return;
  }
}

}  // namespace flashpipe::fastboot
