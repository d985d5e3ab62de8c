#include "host/libusb_backend.h"

#include <libusb-1.0/libusb.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "base/log.h"
#include "wire/usb.h"

namespace flashpipe::host {
namespace {

Status UsbError(std::string what, int rc) {
  std::string name = libusb_error_name(rc);
  switch (rc) {
    case LIBUSB_ERROR_TIMEOUT: return TimedOut(fmt::format("{}: {}", what, name));
    case LIBUSB_ERROR_NO_DEVICE:
    case LIBUSB_ERROR_PIPE:
    case LIBUSB_ERROR_IO: return Cancelled(fmt::format("{}: {} (the device went away)", what, name));
    case LIBUSB_ERROR_ACCESS: return InvalidArgument(fmt::format("{}: {} (no permission: udev rules?)", what, name));
    case LIBUSB_ERROR_BUSY: return Busy(fmt::format("{}: {} (another program holds the interface)", what, name));
    default: return IoError(fmt::format("{}: {}", what, name), 0);
  }
}

std::string PathOf(libusb_device* dev) {
  uint8_t ports[8];
  int n = libusb_get_port_numbers(dev, ports, sizeof ports);
  std::string path = std::to_string(libusb_get_bus_number(dev));
  for (int i = 0; i < n; ++i) path += (i == 0 ? "-" : ".") + std::to_string(ports[i]);
  return path;
}

// The fastboot interface of a device, if it has one.
bool FindInterface(libusb_device* dev, UsbDeviceInfo* info) {
  libusb_config_descriptor* config = nullptr;
  if (libusb_get_active_config_descriptor(dev, &config) != 0 || config == nullptr) return false;
  bool found = false;
  for (int i = 0; i < config->bNumInterfaces && !found; ++i) {
    for (int a = 0; a < config->interface[i].num_altsetting && !found; ++a) {
      const libusb_interface_descriptor& alt = config->interface[i].altsetting[a];
      if (alt.bInterfaceClass != wire::usb::kInterfaceClass || alt.bInterfaceSubClass != wire::usb::kInterfaceSubclass ||
          alt.bInterfaceProtocol != wire::usb::kInterfaceProtocol) {
        continue;
      }
      info->ep_in = info->ep_out = 0;
      for (int e = 0; e < alt.bNumEndpoints; ++e) {
        const libusb_endpoint_descriptor& ep = alt.endpoint[e];
        if ((ep.bmAttributes & LIBUSB_TRANSFER_TYPE_MASK) != LIBUSB_TRANSFER_TYPE_BULK) continue;
        if (ep.bEndpointAddress & LIBUSB_ENDPOINT_IN) {
          info->ep_in = ep.bEndpointAddress;
        } else {
          info->ep_out = ep.bEndpointAddress;
          info->max_packet = ep.wMaxPacketSize;
        }
      }
      info->interface = alt.bInterfaceNumber;
      found = info->ep_in != 0 && info->ep_out != 0;
    }
  }
  libusb_free_config_descriptor(config);
  return found;
}

// The serial number the kernel read when the device enumerated, from sysfs,
// with every non-ASCII character as '?' (as libusb_get_string_descriptor_ascii
// gives it). Listing so opens no device: only those asked for are opened,
// and another process keeps using the others undisturbed (another job's
// flashpipe, the AOSP client; docs/contracts.md). nullopt: sysfs does not
// know the device (then it is opened to ask).
std::optional<std::string> SysfsSerial(const std::string& path) {
  std::string dir = "/sys/bus/usb/devices/" + path;
  if (::access(dir.c_str(), F_OK) != 0) return std::nullopt;
  std::ifstream f(dir + "/serial");  // absent: the device has no serial string
  std::string utf8, ascii;
  if (f) std::getline(f, utf8);
  for (unsigned char c : utf8) {
    if (c < 0x80) ascii += static_cast<char>(c);
    else if (c >= 0xC0) ascii += '?';  // a code point's first byte; its continuation bytes are dropped
  }
  return ascii;
}

// Whether this process may open the device's usbfs node (else "no permissions").
bool UsbfsWritable(uint8_t bus, uint8_t address) {
  char node[32];
  std::snprintf(node, sizeof node, "/dev/bus/usb/%03u/%03u", bus, address);
  return ::access(node, R_OK | W_OK) == 0;
}

// The serial by opening the device and asking it: where sysfs is missing.
void SerialByOpening(libusb_device* dev, const libusb_device_descriptor& desc, UsbDeviceInfo* info) {
  libusb_device_handle* h = nullptr;
  if (libusb_open(dev, &h) != 0) {
    info->writable = false;
    return;
  }
  unsigned char serial[256] = {};
  if (desc.iSerialNumber != 0 && libusb_get_string_descriptor_ascii(h, desc.iSerialNumber, serial, sizeof serial) > 0) {
    info->serial = reinterpret_cast<char*>(serial);
  }
  libusb_close(h);
}

struct ContextExit {
  void operator()(libusb_context* ctx) const { libusb_exit(ctx); }
};
using Context = std::unique_ptr<libusb_context, ContextExit>;

// A context that has just scanned the bus.
Result<Context> NewContext() {
  libusb_context* ctx = nullptr;
  int rc = libusb_init(&ctx);
  if (rc != 0) return UsbError("starting libusb", rc);
  return Context(ctx);
}

// A finished transfer's status, in the words UsbError uses.
Status TransferStatus(libusb_transfer_status status, const char* what) {
  switch (status) {
    case LIBUSB_TRANSFER_COMPLETED: return Status::Ok();
    case LIBUSB_TRANSFER_CANCELLED: return Cancelled(fmt::format("{}: cancelled", what));
    case LIBUSB_TRANSFER_TIMED_OUT: return TimedOut(fmt::format("{}: timed out", what));
    case LIBUSB_TRANSFER_OVERFLOW: return ProtocolError(fmt::format("{}: the device sent more than asked", what));
    case LIBUSB_TRANSFER_NO_DEVICE: return Cancelled(fmt::format("{}: the device went away", what));
    case LIBUSB_TRANSFER_STALL: return Cancelled(fmt::format("{}: endpoint stalled (the device went away)", what));
    default: return Cancelled(fmt::format("{}: transfer error (the device went away)", what));
  }
}

class LibUsbHandle : public UsbHandle {
 public:
  LibUsbHandle(Context ctx, libusb_device_handle* h, const UsbDeviceInfo& info)
      : ctx_(std::move(ctx)), h_(h), info_(info) {}
  ~LibUsbHandle() override {
    if (!ReapLeftovers()) {
      // Transfers the kernel still holds: the handle and its context are
      // left open (nobody handles their events again), never freed under them.
      log::Warn("usb:{}: {} transfers never came back; the device stays open", info_.path, live_.size());
      (void)ctx_.release();
      return;
    }
    libusb_release_interface(h_, info_.interface);
    libusb_close(h_);
  }
  Result<size_t> Out(std::span<const uint8_t> data, std::chrono::milliseconds timeout) override {
    return Transfer(info_.ep_out, const_cast<uint8_t*>(data.data()), data.size(), timeout, "bulk out");
  }
  Result<size_t> In(std::span<uint8_t> buf, std::chrono::milliseconds timeout) override {
    return Transfer(info_.ep_in, buf.data(), buf.size(), timeout, "bulk in");
  }

  Result<uint64_t> Submit(UsbDir dir, std::span<uint8_t> buf) override {
    libusb_transfer* t = libusb_alloc_transfer(0);
    if (t == nullptr) return Busy("usb: no memory for a transfer");
    uint64_t tag = ++last_tag_;
    uint8_t ep = dir == UsbDir::kOut ? info_.ep_out : info_.ep_in;
    libusb_fill_bulk_transfer(t, h_, ep, buf.data(), static_cast<int>(buf.size()), &LibUsbHandle::Finished, this, 0);
    live_[t] = tag;
    int rc = libusb_submit_transfer(t);
    if (rc != 0) {
      live_.erase(t);
      libusb_free_transfer(t);
      // usbfs_memory_mb used up (by us or by other programs' devices).
      if (rc == LIBUSB_ERROR_NO_MEM) return Busy("usb: the kernel's memory for transfers in flight is used up");
      return UsbError(dir == UsbDir::kOut ? "bulk out" : "bulk in", rc);
    }
    return tag;
  }

  Result<std::optional<UsbDone>> Reap(std::chrono::milliseconds timeout) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (done_.empty()) {
      auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::optional<UsbDone>();
      timeval tv{static_cast<time_t>(left.count() / 1000000), static_cast<suseconds_t>(left.count() % 1000000)};
      int rc = libusb_handle_events_timeout_completed(ctx_.get(), &tv, nullptr);
      if (rc != 0 && rc != LIBUSB_ERROR_INTERRUPTED) return UsbError("usb: waiting for transfers", rc);
    }
    UsbDone d = std::move(done_.front());
    done_.pop_front();
    return std::optional<UsbDone>(std::move(d));
  }

  void Cancel(uint64_t tag) override {
    for (auto& [t, live_tag] : live_) {
      if (live_tag == tag) libusb_cancel_transfer(t);
    }
  }

 private:
  static void LIBUSB_CALL Finished(libusb_transfer* t) {
    auto* self = static_cast<LibUsbHandle*>(t->user_data);
    auto it = self->live_.find(t);
    if (it != self->live_.end()) {
      const char* what = (t->endpoint & LIBUSB_ENDPOINT_IN) ? "bulk in" : "bulk out";
      self->done_.push_back({it->second, TransferStatus(t->status, what), static_cast<size_t>(t->actual_length)});
      self->live_.erase(it);
    }
    libusb_free_transfer(t);
  }

  // A caller that broke the contract: its transfers are cancelled and
  // reaped here, bounded, so none completes into a closed handle. False:
  // some never came back.
  bool ReapLeftovers() {
    for (auto& [t, tag] : live_) libusb_cancel_transfer(t);
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!live_.empty() && std::chrono::steady_clock::now() < give_up) {
      timeval tv{0, 100000};
      libusb_handle_events_timeout_completed(ctx_.get(), &tv, nullptr);
    }
    return live_.empty();
  }

  Result<size_t> Transfer(uint8_t ep, uint8_t* data, size_t len, std::chrono::milliseconds timeout, const char* what) {
    int done = 0;
    int rc = libusb_bulk_transfer(h_, ep, data, static_cast<int>(len), &done, static_cast<unsigned>(timeout.count()));
    if (rc == LIBUSB_ERROR_TIMEOUT && done == 0) {
      return TimedOut(fmt::format("{}: the device answered nothing for {} s", what, (timeout.count() + 999) / 1000));
    }
    if (rc != 0 && !(rc == LIBUSB_ERROR_TIMEOUT && done > 0)) return UsbError(what, rc);
    return static_cast<size_t>(done);
  }
  Context ctx_;  // exits after the destructor's body has closed the handle
  libusb_device_handle* h_;
  UsbDeviceInfo info_;
  uint64_t last_tag_ = 0;
  std::map<libusb_transfer*, uint64_t> live_;
  std::deque<UsbDone> done_;
};

// A context that scanned the bus moments ago, kept for the next List or
// Open: a scan reads sysfs for every device (tens of ms in the test VM), and
// `flash` would otherwise scan three times before its first command (the
// start-up check, List, Open). Older than kFresh, it is dropped: a new scan
// then sees devices that came back.
struct Scan {
  Context ctx;
  std::chrono::steady_clock::time_point at;  // when ctx scanned the bus
};

Result<Scan> NewScan() {
  FP_ASSIGN_OR_RETURN(Context ctx, NewContext());
  return Scan{std::move(ctx), std::chrono::steady_clock::now()};
}

class FreshContext {
 public:
  void Put(Scan scan) {
    std::lock_guard lock(mu_);
    if (std::chrono::steady_clock::now() - scan.at < kFresh) kept_ = std::move(scan);
  }
  Result<Scan> Take() {
    {
      std::lock_guard lock(mu_);
      Scan kept = std::move(kept_);
      kept_ = Scan{};
      if (kept.ctx && std::chrono::steady_clock::now() - kept.at < kFresh) return kept;
    }
    return NewScan();
  }

 private:
  static constexpr std::chrono::milliseconds kFresh{1000};
  std::mutex mu_;
  Scan kept_;
};

// The device at info's bus and address in ctx's scan; *list to be freed.
libusb_device* Find(libusb_context* ctx, const UsbDeviceInfo& info, libusb_device*** list) {
  ssize_t n = libusb_get_device_list(ctx, list);
  if (n < 0) {
    *list = nullptr;
    return nullptr;
  }
  for (ssize_t i = 0; i < n; ++i) {
    libusb_device* d = (*list)[i];
    if (libusb_get_bus_number(d) == info.bus && libusb_get_device_address(d) == info.address) return d;
  }
  return nullptr;
}

FreshContext& Fresh() {
  static FreshContext fresh;
  return fresh;
}

class LibUsbBackend : public UsbBackend {
 public:
  Result<std::vector<UsbDeviceInfo>> List() override {
    FP_ASSIGN_OR_RETURN(Scan scan, Fresh().Take());
    Context& ctx = scan.ctx;
    libusb_device** list = nullptr;
    ssize_t n = libusb_get_device_list(ctx.get(), &list);
    if (n < 0) return UsbError("listing USB devices", static_cast<int>(n));
    std::vector<UsbDeviceInfo> out;
    for (ssize_t i = 0; i < n; ++i) {
      UsbDeviceInfo info;
      if (!FindInterface(list[i], &info)) continue;
      libusb_device_descriptor desc{};
      libusb_get_device_descriptor(list[i], &desc);
      info.vendor = desc.idVendor;
      info.product = desc.idProduct;
      info.bus = libusb_get_bus_number(list[i]);
      info.address = libusb_get_device_address(list[i]);
      info.path = PathOf(list[i]);
      if (auto serial = SysfsSerial(info.path)) {
        info.serial = *serial;
        info.writable = UsbfsWritable(info.bus, info.address);
      } else {
        SerialByOpening(list[i], desc, &info);
      }
      out.push_back(info);
    }
    libusb_free_device_list(list, 1);
    Fresh().Put(std::move(scan));  // for the Open that usually follows
    return out;
  }

  Result<std::unique_ptr<UsbHandle>> Open(const UsbDeviceInfo& info) override {
    FP_ASSIGN_OR_RETURN(Scan scan, Fresh().Take());
    Context ctx = std::move(scan.ctx);
    libusb_device** list = nullptr;
    libusb_device* dev = Find(ctx.get(), info, &list);
    if (dev == nullptr) {  // not in the kept context's scan: a new one
      if (list != nullptr) libusb_free_device_list(list, 1);
      list = nullptr;
      FP_ASSIGN_OR_RETURN(ctx, NewContext());
      dev = Find(ctx.get(), info, &list);
    }
    libusb_device_handle* h = nullptr;
    int rc = dev ? libusb_open(dev, &h) : LIBUSB_ERROR_NO_DEVICE;
    libusb_free_device_list(list, 1);
    std::string what = fmt::format("usb:{}", info.path);
    if (rc != 0) return UsbError(what, rc);
    libusb_set_auto_detach_kernel_driver(h, 1);
    rc = libusb_claim_interface(h, info.interface);
    if (rc != 0) {
      libusb_close(h);
      return UsbError(what + ": claiming the interface", rc);
    }
    return std::unique_ptr<UsbHandle>(new LibUsbHandle(std::move(ctx), h, info));
  }
};

}  // namespace

Result<UsbBackend*> LibUsb() {
  static std::once_flag once;
  static Status started;
  std::call_once(once, [] {
    auto ctx = NewContext();
    started = ctx.status();
    if (ctx.ok()) Fresh().Put(Scan{std::move(*ctx), std::chrono::steady_clock::now()});
  });
  FP_RETURN_IF_ERROR(started);
  static LibUsbBackend backend;
  return static_cast<UsbBackend*>(&backend);
}

}  // namespace flashpipe::host
