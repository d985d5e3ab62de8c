#include "host/device_address.h"

#include "host/tcp_transport.h"
#include "host/udp_transport.h"
#include "host/usb_transport.h"
#include "wire/tcp_frame.h"
#include "wire/udp_packet.h"

namespace flashpipe::host {

Result<DeviceAddress> ParseDeviceAddress(std::string_view text) {
  DeviceAddress a{.text = std::string(text)};
  auto net = [&](std::string_view prefix, DeviceAddress::Via via, uint16_t port) -> Result<DeviceAddress> {
    a.via = via;
    auto hp = wire::SplitHostPort(text.substr(prefix.size()), port);
    if (!hp.ok()) return InvalidArgument(fmt::format("invalid network address '{}': {}", text, hp.status().message()));
    a.net = *hp;
    return a;
  };
  if (text.starts_with("tcp:")) return net("tcp:", DeviceAddress::Via::kTcp, wire::tcp::kDefaultPort);
  if (text.starts_with("udp:")) return net("udp:", DeviceAddress::Via::kUdp, wire::udp::kDefaultPort);
  return a;
}

bool UsbMatches(const UsbDeviceInfo& device, std::string_view text) {
  return text.empty() || device.serial == text || "usb:" + device.path == text;
}

Result<std::unique_ptr<Transport>> ConnectDevice(const DeviceAddress& a, const TransportOptions& options,
                                                 UsbBackend* usb) {
  switch (a.via) {
    case DeviceAddress::Via::kTcp: {
      FP_ASSIGN_OR_RETURN(auto t, TcpTransport::Connect(a.net, options));
      return std::unique_ptr<Transport>(std::move(t));
    }
    case DeviceAddress::Via::kUdp: {
      FP_ASSIGN_OR_RETURN(auto t, UdpTransport::Connect(a.net, options));
      return std::unique_ptr<Transport>(std::move(t));
    }
    case DeviceAddress::Via::kUsb:
      break;
  }
  if (usb == nullptr) return Unsupported("USB is not available");
  FP_ASSIGN_OR_RETURN(auto devices, usb->List());
  for (const UsbDeviceInfo& d : devices) {
    if (!UsbMatches(d, a.text)) continue;
    FP_ASSIGN_OR_RETURN(auto handle, usb->Open(d));
    std::string name = d.serial.empty() ? "usb:" + d.path : d.serial;
    return std::unique_ptr<Transport>(new UsbTransport(std::move(handle), name, options));
  }
  return NotFound(a.text.empty() ? std::string("no fastboot USB device")
                                 : fmt::format("no fastboot USB device '{}'", a.text));
}

}  // namespace flashpipe::host
