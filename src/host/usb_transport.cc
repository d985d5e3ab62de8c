#include "host/usb_transport.h"

#include <algorithm>

#include "wire/usb.h"

namespace flashpipe::host {

UsbTransport::UsbTransport(std::unique_ptr<UsbHandle> handle, std::string name, const TransportOptions& options)
    : UsbTransport(std::move(handle), std::move(name), options, UsbQueueFromEnv(options.idle)) {}

UsbTransport::UsbTransport(std::unique_ptr<UsbHandle> handle, std::string name, const TransportOptions& options,
                           const UsbQueueOptions& queue)
    : handle_(std::move(handle)),
      name_(std::move(name)),
      options_(options),
      queue_options_(queue),
      out_(std::make_unique<UsbOutQueue>(*handle_, queue_options_)) {}

UsbTransport::~UsbTransport() { out_.reset(); }

Status UsbTransport::Send(std::string_view command) {
  FP_RETURN_IF_ERROR(out_->Drain());
  auto bytes = std::span(reinterpret_cast<const uint8_t*>(command.data()), command.size());
  FP_ASSIGN_OR_RETURN(size_t n, handle_->Out(bytes, options_.idle));
  if (n != bytes.size()) {
    return TimedOut(fmt::format("usb: the device took {} of {} bytes of a command in {} s", n, bytes.size(),
                                options_.idle.count() / 1000));
  }
  return Status::Ok();
}

Status UsbTransport::SendData(std::span<const std::span<const uint8_t>> pieces) { return out_->Write(pieces); }

Status UsbTransport::SendDataFile(std::span<const std::span<const uint8_t>> head, int file, uint64_t offset,
                                  uint64_t n) {
  FP_RETURN_IF_ERROR(out_->Write(head));
  return out_->WriteFile(file, offset, n);
}

Status UsbTransport::ReceiveData(std::span<uint8_t> buf) {
  if (buf.empty()) return Status::Ok();  // the probe (transport.h): USB reads data phases
  FP_RETURN_IF_ERROR(out_->Drain());
  return UsbReadExact(*handle_, buf, queue_options_);
}

Result<std::string> UsbTransport::Receive() {
  FP_RETURN_IF_ERROR(out_->Drain());
  std::string message(wire::usb::kMaxResponse, '\0');
  FP_ASSIGN_OR_RETURN(size_t n, handle_->In(std::span(reinterpret_cast<uint8_t*>(message.data()), message.size()),
                                            options_.idle));
  message.resize(n);
  return message;
}

}  // namespace flashpipe::host
