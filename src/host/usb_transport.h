// UsbTransport: fastboot over USB from the host (wire/usb.h) on a UsbHandle:
// a command is one bulk OUT transfer, a response one bulk IN transfer of up
// to 64 bytes, the data phase bulk OUT transfers of up to 1 MiB each (the
// device counts bytes, so pieces may be cut anywhere).
#pragma once

#include <memory>
#include <string>

#include "host/transport.h"
#include "host/usb_backend.h"

namespace flashpipe::host {

class UsbTransport : public Transport {
 public:
  UsbTransport(std::unique_ptr<UsbHandle> handle, std::string name, const TransportOptions& options);

  Status Send(std::string_view command) override;
  Result<std::string> Receive() override;
  Status SendData(std::span<const std::span<const uint8_t>> pieces) override;
  std::string name() const override { return name_; }

 private:
  Status Out(std::span<const uint8_t> bytes);

  std::unique_ptr<UsbHandle> handle_;
  std::string name_;
  TransportOptions options_;
};

}  // namespace flashpipe::host
