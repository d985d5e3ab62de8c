// Drives the USB fastboot server (UsbServer over a fake FunctionFS: ep0
// events through a pipe, a fake USB bus; testing/fake_ffs.h) with random
// host behaviour: commands and download data in transfers of any size, ep0
// events (disable, re-enable at another speed, setup requests, suspend)
// interleaved, responses taken or left waiting. The storage is an in-memory
// disk whose queue aborts on any op outside the partitions. Also a crash:
// a response over 64 bytes, or a read still queued after the server stopped
// (it could land in a download buffer later).
//
// Input: records [op][len_hi][len_lo][bytes...]. op % 8: 0-2 one OUT
// transfer of the bytes (1: ended by a zero-length packet), 3 an ep0 event
// (type = bytes[0] % 7, then the 8 setup bytes), 4 the host goes away and a
// new one comes at 64/512/1024 bytes per packet (bytes[0] % 3), 5 the host
// leaves the responses waiting for this record, 6-7 a short pause.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "base/endian.h"
#include "fastboot/device.h"
#include "fastboot/storage.h"
#include "fastboot/usb_server.h"
#include "testing/fake_ffs.h"
#include "testing/fastboot_fakes.h"

using namespace flashpipe;
using namespace flashpipe::fastboot;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kDisk = 1 << 20;
constexpr uint32_t kPacket[] = {64, 512, 1024};

std::unique_ptr<FastbootDevice> MakeDevice(testing::MemQueue* mem) {
  std::vector<Partition> parts = {{"boot_a", 0, 64 << 10, 128 << 10},
                                  {"system", 0, 512 << 10, 256 << 10},
                                  {"odd", 0, (768 << 10) + 4096, 12288}};
  for (const auto& p : parts) mem->Allow(p.offset, p.size);
  mem->AbortOnViolation(true);
  io::Geometry g{.size = kDisk, .logical_block = 512, .physical_block = 4096, .mem_align = 512,
                 .offset_align = 512, .max_request = 64 << 10, .direct = false};
  DeviceConfig config;
  config.max_download_size = 256 << 10;
  WriteOptions write{.queue_depth = 2, .request_size = 64 << 10};
  return std::make_unique<FastbootDevice>(config, Storage::ForQueue(mem, g, parts, write), PersistentState::InMemory());
}

void TakeResponses(testing::FakeEndpoints& bus) {
  while (auto r = bus.HostTake(2ms)) {
    if (r->size() > wire::kMaxResponse) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (64 << 10)) return 0;
  testing::MemQueue mem(kDisk, 0xEE);
  auto device = MakeDevice(&mem);
  testing::FakeEndpoints bus(512);
  testing::FakeEp0 ep0;
  UsbServerOptions options{.name = "usb fuzz"};
  options.transport = {.read_size = 8 << 10, .read_depth = 4, .max_writes = 8,
                       .data_timeout = 30ms, .write_timeout = 30ms};
  UsbServer server(device.get(), ep0.read_fd(), ep0.write_fd(), &bus, options);
  server.Start();
  ep0.Send(ffs::EventType::kBind);
  ep0.Send(ffs::EventType::kEnable);
  size_t pos = 0;
  for (int records = 0; pos + 3 <= size && records < 64; ++records) {
    uint8_t op = data[pos] % 8;
    size_t n = std::min<size_t>(LoadBE16(data + pos + 1), size - pos - 3);
    std::string_view bytes(reinterpret_cast<const char*>(data + pos + 3), n);
    pos += 3 + n;
    uint8_t first = n > 0 ? static_cast<uint8_t>(bytes[0]) : 0;
    switch (op) {
      case 0:
      case 1:
      case 2:
        bus.HostSend(bytes, op == 1);
        break;
      case 3: {
        ffs::Setup setup;
        if (n >= 9) {
          setup = {static_cast<uint8_t>(bytes[1]), static_cast<uint8_t>(bytes[2]), LoadLE<uint16_t>(bytes.data() + 3),
                   LoadLE<uint16_t>(bytes.data() + 5), LoadLE<uint16_t>(bytes.data() + 7)};
        }
        ep0.Send(static_cast<ffs::EventType>(first % 7), setup);
        break;
      }
      case 4:
        bus.Disconnect();
        ep0.Send(ffs::EventType::kDisable);
        bus.Reconnect(kPacket[first % 3]);
        ep0.Send(ffs::EventType::kEnable);
        break;
      case 5:
        std::this_thread::sleep_for(5ms);
        continue;  // responses stay waiting
      default:
        std::this_thread::sleep_for(1ms);
        break;
    }
    TakeResponses(bus);
  }
  TakeResponses(bus);
  server.Stop();
  if (bus.reads_queued() != 0) std::abort();  // a read left behind could land in a buffer later
  (void)device->WaitWrites();
  return 0;
}
