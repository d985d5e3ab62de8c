// usb_fetch_probe SERIAL PARTITION SIZE OUT: reads the first SIZE bytes of
// PARTITION from a fastboot USB device with `fetch:` through the host's USB
// transport (Transport::ReceiveData: queued bulk IN transfers, usb_queue.h)
// and writes them to OUT, for tests/vm/usb_host_vm_test.sh, which compares
// them with the image. Until a host command reads back over USB, this is
// what runs ReceiveData on libusb. Exit 0 only when every byte came and the
// device answered OKAY; not installed.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/fd_io.h"
#include "host/device_address.h"
#include "host/libusb_backend.h"
#include "wire/protocol.h"

namespace {

using namespace flashpipe;

Result<std::string> Final(host::Transport& t) {
  for (;;) {
    FP_ASSIGN_OR_RETURN(std::string msg, t.Receive());
    FP_ASSIGN_OR_RETURN(wire::Response r, wire::ParseResponse(msg));
    if (!r.final()) continue;
    if (r.kind == wire::Response::Kind::kFail) return Unsupported("remote: " + r.message);
    return msg;
  }
}

Status Fetch(const std::string& serial, const std::string& part, uint64_t size, const std::string& out) {
  FP_ASSIGN_OR_RETURN(host::DeviceAddress address, host::ParseDeviceAddress(serial));
  FP_ASSIGN_OR_RETURN(host::UsbBackend * usb, host::LibUsb());
  FP_ASSIGN_OR_RETURN(auto t, host::ConnectDevice(address, host::TransportOptions{.idle = std::chrono::seconds(20)}, usb));
  FP_RETURN_IF_ERROR(t->Send(fmt::format("fetch:{}:0x0:0x{:x}", part, size)));
  FP_ASSIGN_OR_RETURN(std::string data, Final(*t));
  FP_ASSIGN_OR_RETURN(wire::Response r, wire::ParseResponse(data));
  if (r.kind != wire::Response::Kind::kData || r.data_size != size) return ProtocolError("answer '" + data + "'");
  std::vector<uint8_t> buf(size);
  FP_RETURN_IF_ERROR(t->ReceiveData(buf));
  FP_ASSIGN_OR_RETURN(std::string okay, Final(*t));
  if (okay.rfind("OKAY", 0) != 0) return ProtocolError("after the data: '" + okay + "'");
  UniqueFd fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoError("open " + out);
  return WriteAll(fd.get(), buf, out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: usb_fetch_probe SERIAL PARTITION SIZE OUT\n");
    return 2;
  }
  Status st = Fetch(argv[1], argv[2], std::stoull(argv[3]), argv[4]);
  if (!st.ok()) {
    std::fprintf(stderr, "usb_fetch_probe: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
