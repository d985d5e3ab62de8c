// Feeds random bytes to a fastboot session over a fake storage: as a TCP byte
// stream (after the FB01 handshake, through the real TcpConnection over a
// socketpair) or as UDP packets (through UdpServer's packet engine). The
// storage is an in-memory disk whose queue aborts on any op outside the
// partitions, so a bounds bug anywhere in the flash/erase path is a crash.
//
// Input: byte 0 chooses the transport (even: TCP, odd: UDP). UDP packets are
// [len_hi][len_lo][bytes...] records; the client port is the record's parity.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "base/endian.h"
#include "fastboot/device.h"
#include "fastboot/session.h"
#include "fastboot/storage.h"
#include "fastboot/tcp.h"
#include "fastboot/udp.h"
#include "testing/fastboot_fakes.h"

using namespace flashpipe;
using namespace flashpipe::fastboot;

namespace {

constexpr uint64_t kDisk = 1 << 20;

std::unique_ptr<FastbootDevice> MakeDevice(testing::MemQueue* mem) {
  std::vector<Partition> parts = {{"boot_a", 0, 64 << 10, 128 << 10},
                                  {"boot_b", 0, 256 << 10, 128 << 10},
                                  {"system", 0, 512 << 10, 256 << 10},
                                  {"odd", 0, (768 << 10) + 4096, 12288}};
  for (const auto& p : parts) mem->Allow(p.offset, p.size);
  mem->AbortOnViolation(true);
  io::Geometry g{.size = kDisk, .logical_block = 512, .physical_block = 4096, .mem_align = 512,
                 .offset_align = 512, .max_request = 64 << 10, .direct = false};
  DeviceConfig config;
  config.max_download_size = 256 << 10;
  config.oem = {{"ok", "true"}};
  WriteOptions write{.queue_depth = 2, .request_size = 64 << 10};
  return std::make_unique<FastbootDevice>(config, Storage::ForQueue(mem, g, parts, write),
                                          PersistentState::InMemory());
}

void RunTcp(const uint8_t* data, size_t size) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
  int big = 4 << 20;
  setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  testing::MemQueue mem(kDisk, 0xEE);
  auto device = MakeDevice(&mem);
  // The client side: writes the input, then reads responses until EOF.
  std::thread client([&] {
    (void)!send(sv[1], "FB01", 4, MSG_NOSIGNAL);
    size_t done = 0;
    while (done < size) {
      ssize_t n = send(sv[1], data + done, size - done, MSG_NOSIGNAL);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    shutdown(sv[1], SHUT_WR);
    char buf[4096];
    while (read(sv[1], buf, sizeof buf) > 0) {
    }
    close(sv[1]);
  });
  {
    TcpConnection transport(UniqueFd(sv[0]), "fuzz", std::chrono::milliseconds(2000));
    if (transport.Handshake().ok()) (void)Session(device.get(), &transport).Run();
  }  // closes sv[0]: the client's read ends
  client.join();
  (void)device->WaitWrites();
}

void RunUdp(const uint8_t* data, size_t size) {
  testing::MemQueue mem(kDisk, 0xEE);
  auto device = MakeDevice(&mem);
  UdpOptions options;
  options.inbound_limit = 1 << 20;
  auto server = UdpServer::ForTest(device.get(), options, [](std::span<const uint8_t> pkt) {
    if (pkt.size() < 4 || pkt.size() > 4 + 65535) abort();
  });
  if (!server.ok()) return;
  size_t pos = 0;
  int record = 0;
  while (pos + 2 <= size) {
    size_t n = std::min<size_t>(LoadBE16(data + pos), size - pos - 2);
    (*server)->InjectPacket(static_cast<uint16_t>(40000 + (record++ & 1)), std::span(data + pos + 2, n));
    pos += 2 + n;
  }
  server->reset();  // closes the channel, joins the session
  (void)device->WaitWrites();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (512 << 10)) return 0;
  if (data[0] % 2 == 0) {
    RunTcp(data + 1, size - 1);
  } else {
    RunUdp(data + 1, size - 1);
  }
  return 0;
}
