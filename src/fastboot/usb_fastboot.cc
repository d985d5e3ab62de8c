#include "fastboot/usb_fastboot.h"

#include <fcntl.h>

#include <chrono>
#include <thread>

#include "base/fd_io.h"

namespace flashpipe::fastboot {
namespace {

// Requests queued at once: data reads, a command read, responses.
constexpr unsigned kMaxRequests = 64;
// After the last response of a reboot, time for the client to return from
// its read (the host's URB is done when our write is; its process may not
// be), then how long the device stays off the bus: long enough for the host
// to see it go (the 29.0.6 client polls for that every 50 ms).
constexpr auto kBeforeReboot = std::chrono::milliseconds(500);
constexpr auto kOffBus = std::chrono::milliseconds(1000);

}  // namespace

Result<std::unique_ptr<UsbFastboot>> UsbFastboot::Start(FastbootDevice* device, const UsbServeConfig& config) {
  std::unique_ptr<UsbFastboot> u(new UsbFastboot());
  std::string dir = config.ffs_dir;
  UsbServerOptions options{.transport = config.transport};
  if (dir.empty()) {
    FP_ASSIGN_OR_RETURN(u->gadget_, UsbGadget::Create(config.gadget));
    dir = u->gadget_->ffs_dir();
    u->where_ = fmt::format("UDC {}, serial {}", u->gadget_->udc(), config.gadget.serial);
    options.name = "usb " + u->gadget_->udc();
    UsbGadget* gadget = u->gadget_.get();
    options.reenumerate = [gadget] {
      std::this_thread::sleep_for(kBeforeReboot);
      (void)gadget->Unbind();
      std::this_thread::sleep_for(kOffBus);
      (void)gadget->Bind();
    };
  } else {
    u->where_ = "FunctionFS " + dir;
    options.name = "usb " + dir;
  }
  const std::string ep0 = dir + "/ep0";
  u->ep0_ = UniqueFd(RetryOnEintr([&] { return ::open(ep0.c_str(), O_RDWR | O_CLOEXEC); }));
  if (!u->ep0_.valid()) return ErrnoError("usb: open " + ep0);
  FP_RETURN_IF_ERROR(WriteFunctionDescriptors(u->ep0_.get(), ep0));
  FP_ASSIGN_OR_RETURN(u->endpoints_, AioEndpoints::Open(dir, kMaxRequests));
  u->server_ = std::make_unique<UsbServer>(device, u->ep0_.get(), u->ep0_.get(), u->endpoints_.get(), options);
  u->server_->Start();
  if (u->gadget_) FP_RETURN_IF_ERROR(u->gadget_->Bind());
  return u;
}

UsbFastboot::~UsbFastboot() { Stop(); }

void UsbFastboot::Stop() {
  if (server_) server_->Stop();
  if (gadget_) (void)gadget_->Unbind();
  server_.reset();
  endpoints_.reset();  // gives back what is still queued
  ep0_.Reset();
  if (gadget_) gadget_->Remove();
  gadget_.reset();
}

}  // namespace flashpipe::fastboot
