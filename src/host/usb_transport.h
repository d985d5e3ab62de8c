// UsbTransport: fastboot over USB from the host (wire/usb.h) on a UsbHandle:
// a command is one bulk OUT transfer, a response one bulk IN transfer of up
// to 64 bytes. A download's data goes through a UsbOutQueue (usb_queue.h:
// several large transfers in flight, no zero-length packet; the device
// counts bytes, so transfers may be cut anywhere): SendData returns once
// its bytes are queued, and the next Send or Receive first waits for every
// one of them, so a failed transfer fails the download before its answer
// is read. A file range (SendDataFile) is read straight into the transfer
// buffers: one copy, no shared window. ReceiveData reads a fetch:/upload data phase with IN transfers
// in flight (UsbReadExact). After a data phase failed the transport keeps
// failing: the byte stream has a hole.
#pragma once

#include <memory>
#include <string>

#include "host/transport.h"
#include "host/usb_backend.h"
#include "host/usb_queue.h"

namespace flashpipe::host {

class UsbTransport : public Transport {
 public:
  // `queue` defaults to UsbQueueFromEnv(options.idle).
  UsbTransport(std::unique_ptr<UsbHandle> handle, std::string name, const TransportOptions& options);
  UsbTransport(std::unique_ptr<UsbHandle> handle, std::string name, const TransportOptions& options,
               const UsbQueueOptions& queue);
  ~UsbTransport() override;

  Status Send(std::string_view command) override;
  Result<std::string> Receive() override;
  Status SendData(std::span<const std::span<const uint8_t>> pieces) override;
  bool can_send_file() const override { return true; }
  Status SendDataFile(std::span<const std::span<const uint8_t>> head, int file, uint64_t offset,
                      uint64_t n) override;
  Status ReceiveData(std::span<uint8_t> buf) override;
  std::string name() const override { return name_; }

 private:
  std::unique_ptr<UsbHandle> handle_;
  std::string name_;
  TransportOptions options_;
  UsbQueueOptions queue_options_;
  std::unique_ptr<UsbOutQueue> out_;  // destroyed (reaped) before handle_
};

}  // namespace flashpipe::host
