#include "host/usb_transport.h"

#include <algorithm>

#include "wire/usb.h"

namespace flashpipe::host {
namespace {

constexpr size_t kMaxTransfer = 1 << 20;

}  // namespace

UsbTransport::UsbTransport(std::unique_ptr<UsbHandle> handle, std::string name, const TransportOptions& options)
    : handle_(std::move(handle)), name_(std::move(name)), options_(options) {}

Status UsbTransport::Out(std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    auto piece = bytes.first(std::min(bytes.size(), kMaxTransfer));
    FP_ASSIGN_OR_RETURN(size_t n, handle_->Out(piece, options_.idle));
    if (n == 0) return TimedOut(fmt::format("the device took no data for {} s", options_.idle.count() / 1000));
    bytes = bytes.subspan(n);
  }
  return Status::Ok();
}

Status UsbTransport::Send(std::string_view command) {
  return Out(std::span(reinterpret_cast<const uint8_t*>(command.data()), command.size()));
}

Status UsbTransport::SendData(std::span<const std::span<const uint8_t>> pieces) {
  for (auto p : pieces) FP_RETURN_IF_ERROR(Out(p));
  return Status::Ok();
}

Result<std::string> UsbTransport::Receive() {
  std::string message(wire::usb::kMaxResponse, '\0');
  FP_ASSIGN_OR_RETURN(size_t n, handle_->In(std::span(reinterpret_cast<uint8_t*>(message.data()), message.size()),
                                            options_.idle));
  message.resize(n);
  return message;
}

}  // namespace flashpipe::host
