#include "wire/protocol.h"

#include <fmt/format.h>

namespace flashpipe::wire {
namespace {

bool Printable(char c) { return c >= 0x20 && c < 0x7f; }

// For messages about bytes from a peer: at most 64, unprintable ones as '?'.
std::string Printable(std::string_view bytes) {
  std::string out;
  for (char c : bytes.substr(0, kMaxResponse)) out.push_back(Printable(c) ? c : '?');
  return out;
}

std::string Format(std::string_view status, std::string_view message) {
  std::string out(status);
  size_t n = std::min(message.size(), kMaxMessage);
  for (size_t i = 0; i < n; ++i) out.push_back(Printable(message[i]) ? message[i] : '?');
  return out;
}

bool IsSpaceFamily(std::string_view name) { return name == "oem" || name == "flashing"; }

}  // namespace

Result<Command> ParseCommand(std::string_view wire) {
  if (wire.empty()) return InvalidArgument("empty command");
  if (wire.size() > kMaxCommand) {
    return InvalidArgument(fmt::format("command of {} bytes, max {}", wire.size(), kMaxCommand));
  }
  for (size_t i = 0; i < wire.size(); ++i) {
    if (!Printable(wire[i])) {
      return InvalidArgument(fmt::format("command byte {} is 0x{:02x}, not printable ASCII", i,
                                         static_cast<uint8_t>(wire[i])));
    }
  }
  size_t space = wire.find(' ');
  if (space != std::string_view::npos && IsSpaceFamily(wire.substr(0, space))) {
    return Command{std::string(wire.substr(0, space)), std::string(wire.substr(space + 1))};
  }
  size_t colon = wire.find(':');
  if (colon == std::string_view::npos) return Command{std::string(wire), {}};
  return Command{std::string(wire.substr(0, colon)), std::string(wire.substr(colon + 1))};
}

std::string Okay(std::string_view message) { return Format("OKAY", message); }
std::string Fail(std::string_view message) { return Format("FAIL", message); }
std::string Info(std::string_view message) { return Format("INFO", message); }
std::string Data(uint32_t size) { return fmt::format("DATA{:08x}", size); }
std::string Hex32(uint32_t value) { return fmt::format("0x{:08x}", value); }
std::string Hex64(uint64_t value) { return fmt::format("0x{:016x}", value); }

Result<uint32_t> ParseDownloadSize(std::string_view arg) {
  if (arg.size() != 8) {
    return InvalidArgument(fmt::format("download size '{}' is not 8 hex digits", arg.substr(0, 16)));
  }
  uint32_t v = 0;
  for (char c : arg) {
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) return InvalidArgument(fmt::format("download size '{}' is not hex", arg));
    v = (v << 4) | static_cast<uint32_t>(d);
  }
  if (v == 0) return InvalidArgument("download size 0");
  return v;
}

std::string DownloadCommand(uint32_t size) { return fmt::format("download:{:08x}", size); }

Result<Response> ParseResponse(std::string_view wire) {
  using Kind = Response::Kind;
  static constexpr std::pair<std::string_view, Kind> kKinds[] = {
      {"OKAY", Kind::kOkay}, {"FAIL", Kind::kFail}, {"INFO", Kind::kInfo}, {"TEXT", Kind::kText}, {"DATA", Kind::kData}};
  std::string_view status = wire.substr(0, 4);
  for (auto [word, kind] : kKinds) {
    if (wire.size() < 4 || status != word) continue;
    Response r{kind, std::string(wire.substr(4)), 0};
    if (kind != Kind::kData) return r;
    auto size = ParseDownloadSize(r.message);
    if (!size.ok()) return Corrupt(fmt::format("response '{}': {}", Printable(wire), size.status().message()));
    r.data_size = *size;
    return r;
  }
  return Corrupt(fmt::format("response '{}' is not OKAY, FAIL, INFO, TEXT or DATA", Printable(wire)));
}


}  // namespace flashpipe::wire
