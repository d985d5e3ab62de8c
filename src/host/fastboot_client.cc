#include "host/fastboot_client.h"

#include <charconv>

#include "base/log.h"
#include "base/units.h"
#include "wire/protocol.h"

namespace flashpipe::host {

// Counts a download's bytes on their way to the transport.
class FastbootClient::Counter : public DataOut {
 public:
  Counter(Transport& t, std::atomic<uint64_t>* total) : t_(t), total_(total) {}
  Status Send(std::span<const std::span<const uint8_t>> pieces) override {
    if (Status st = t_.SendData(pieces); !st.ok()) {
      transport_failed = true;
      return st;
    }
    Sent(pieces, 0);
    return Status::Ok();
  }
  bool can_send_file() const override { return t_.can_send_file(); }
  Status SendFile(std::span<const std::span<const uint8_t>> head, const FileSpan& f) override {
    if (Status st = t_.SendDataFile(head, f.fd, f.offset, f.size); !st.ok()) {
      // An image file that ends early is the image's fault, not the device's.
      transport_failed = st.code() != Code::kCorrupt;
      return st;
    }
    Sent(head, f.size);
    return Status::Ok();
  }
  uint64_t sent = 0;
  bool transport_failed = false;

 private:
  void Sent(std::span<const std::span<const uint8_t>> pieces, uint64_t more) {
    for (auto p : pieces) more += p.size();
    sent += more;
    total_->fetch_add(more, std::memory_order_relaxed);
  }
  Transport& t_;
  std::atomic<uint64_t>* total_;
};

FastbootClient::FastbootClient(std::unique_ptr<Transport> transport, InfoFn info)
    : transport_(std::move(transport)), info_(std::move(info)) {}

Status FastbootClient::Failed(Status st, Failure why) {
  failure_ = why;
  return st;
}

Result<std::string> FastbootClient::Answer(bool data_ok, uint32_t* data_size, std::vector<std::string>* info) {
  for (;;) {
    auto wire_msg = transport_->Receive();
    if (!wire_msg.ok()) return Failed(wire_msg.status());
    auto r = wire::ParseResponse(*wire_msg);
    if (!r.ok()) return Failed(ProtocolError(r.status().message()));  // the device's fault, not the image's
    switch (r->kind) {
      case wire::Response::Kind::kInfo:
      case wire::Response::Kind::kText:
        if (info != nullptr) {
          info->emplace_back(r->message);
        } else if (info_) {
          info_(r->message);
        }
        continue;
      case wire::Response::Kind::kOkay:
        if (data_ok) {
          return Failed(ProtocolError(fmt::format("the device answered OKAY{} to download, not DATA: it took no data",
                                                  r->message.empty() ? "" : " '" + log::Printable(r->message, 40) + "'")));
        }
        failure_ = Failure::kNone;
        return r->message;
      case wire::Response::Kind::kFail:
        return Failed(Unsupported(fmt::format("remote: '{}'", r->message)), Failure::kRefused);
      case wire::Response::Kind::kData:
        if (!data_ok) return Failed(ProtocolError(fmt::format("unexpected DATA{:08x}", r->data_size)));
        *data_size = r->data_size;
        failure_ = Failure::kNone;
        return std::string();
    }
  }
}

Result<std::string> FastbootClient::Command(std::string_view command, std::vector<std::string>* info) {
  if (Status st = transport_->Send(command); !st.ok()) return Failed(st);
  return Answer(false, nullptr, info);
}

Status FastbootClient::Download(uint32_t size, const std::function<Status(DataOut&)>& write) {
  if (Status st = transport_->Send(wire::DownloadCommand(size)); !st.ok()) return Failed(st);
  uint32_t agreed = 0;
  FP_RETURN_IF_ERROR(Answer(true, &agreed).status());
  if (agreed != size) {
    return Failed(ProtocolError(fmt::format("asked to download {} bytes, the device said DATA{:08x}", size, agreed)));
  }
  Counter out(*transport_, &data_bytes_);
  Status st = write(out);
  if (!st.ok()) return Failed(st, out.transport_failed ? Failure::kGone : Failure::kOther);
  if (out.sent != size) {
    return Failed(Internal(fmt::format("download of {} bytes: {} sent", size, out.sent)), Failure::kOther);
  }
  return Answer(false, nullptr).status();
}

Status FastbootClient::Fetch(std::string_view partition, uint64_t offset, uint32_t size,
                             const std::function<Status(std::span<const uint8_t>)>& sink) {
  if (size == 0) return Failed(InvalidArgument("fetch of 0 bytes"), Failure::kOther);
  if (Status st = transport_->ReceiveData({}); !st.ok()) return Failed(st, Failure::kOther);
  std::string command = fmt::format("fetch:{}:0x{:08x}:0x{:08x}", partition, offset, size);
  if (Status st = transport_->Send(command); !st.ok()) return Failed(st);
  uint32_t announced = 0;
  FP_RETURN_IF_ERROR(Answer(true, &announced).status());  // a FAIL as the device said it
  if (announced != size) {
    return Failed(ProtocolError(fmt::format("{}: asked for {} bytes, the device announced DATA{:08x} ({} bytes)",
                                            command, size, announced, announced)));
  }
  std::vector<uint8_t> buf(std::min<size_t>(size, 1 << 20));
  for (uint32_t left = size; left > 0;) {
    auto piece = std::span(buf).first(std::min<size_t>(left, buf.size()));
    if (Status st = transport_->ReceiveData(piece); !st.ok()) {
      return Failed(st.WithContext(fmt::format("{}: after {} of {} bytes", command, size - left, size)));
    }
    fetched_bytes_.fetch_add(piece.size(), std::memory_order_relaxed);
    left -= static_cast<uint32_t>(piece.size());
    if (Status st = sink(piece); !st.ok()) return Failed(st, Failure::kOther);
  }
  Status st = Answer(false, nullptr).status();
  if (!st.ok() && refused()) {
    // A FAIL after the bytes: the device could not read them all (serve
    // sends zeros for the rest). Not a refusal of the command.
    return Status(Code::kIoError, fmt::format("{}: the device failed after the data phase: {}", command, st.message()));
  }
  return st.WithContext(command);
}

Result<uint64_t> ParseDeviceSize(std::string_view name, std::string_view value) {
  std::string_view v = value;
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\n')) v.remove_suffix(1);
  auto n = ParseNumber(v);  // base/units.h: decimal or 0x hex, at most 64 bits
  if (!n.ok()) {
    return InvalidArgument(fmt::format("the device's {} '{}' is not a size (decimal or 0x hex, at most 64 bits)", name,
                                       log::Printable(value, 40)));
  }
  return n;
}

}  // namespace flashpipe::host
