#include "partition/guid.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

namespace flashpipe::partition {
namespace {

// Text position of each on-disk byte: the first three fields are stored
// little-endian, so their text bytes come in reverse.
constexpr int kTextOrder[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<Guid> ParseGuid(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument(fmt::format("'{}' is not a GUID (8-4-4-4-12 hex digits)", text.substr(0, 60)));
  };
  if (text.size() != 36) return bad();
  uint8_t text_bytes[16];
  size_t n = 0;
  for (size_t i = 0; i < 36;) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return bad();
      ++i;
      continue;
    }
    int hi = HexValue(text[i]), lo = HexValue(text[i + 1]);
    if (hi < 0 || lo < 0) return bad();
    text_bytes[n++] = static_cast<uint8_t>(hi * 16 + lo);
    i += 2;
  }
  Guid g;
  for (int i = 0; i < 16; ++i) g[i] = text_bytes[kTextOrder[i]];
  return g;
}

std::string FormatGuid(const Guid& g) {
  uint8_t t[16];
  for (int i = 0; i < 16; ++i) t[kTextOrder[i]] = g[i];
  return fmt::format("{:02X}{:02X}{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-"
                     "{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}",
                     t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13],
                     t[14], t[15]);
}

bool IsZero(const Guid& g) {
  return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
}

Guid RandomGuid() {
  Guid g{};
  size_t got = 0;
  while (got < g.size()) {
    ssize_t r = ::getrandom(g.data() + got, g.size() - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (errno != EINTR) {  // no getrandom (old kernel, seccomp)
      std::random_device rd;
      for (; got < g.size(); ++got) g[got] = static_cast<uint8_t>(rd());
    }
  }
  g[7] = static_cast<uint8_t>((g[7] & 0x0F) | 0x40);  // version 4 (text byte 6)
  g[8] = static_cast<uint8_t>((g[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return g;
}

}  // namespace flashpipe::partition
