#include "base/units.h"

#include <cctype>
#include <charconv>

namespace flashpipe {
namespace {

// The digits at the start of `t` by the one rule (units.h); *end: after them.
Result<uint64_t> Digits(std::string_view t, int* base_out, const char** end) {
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (ec == std::errc::result_out_of_range) return InvalidArgument("more than 64 bits");
  if (ec != std::errc() || p == t.data()) return InvalidArgument("not a number (decimal or 0x hex)");
  if (base == 10 && p - t.data() > 1 && t[0] == '0') {
    return InvalidArgument("decimal with a leading 0 (octal?)");
  }
  *base_out = base;
  *end = p;
  return v;
}

Result<uint64_t> ParseScaled(std::string_view text, bool binary, const char* what) {
  std::string_view t = text;
  if (t.empty()) return InvalidArgument(fmt::format("empty {}", what));
  int base = 10;
  const char* p = nullptr;
  auto digits = Digits(t, &base, &p);
  if (!digits.ok()) return InvalidArgument(fmt::format("bad {} '{}': {}", what, text, digits.status().message()));
  uint64_t v = *digits;
  std::string_view suffix(p, t.data() + t.size() - p);
  if (suffix.ends_with("iB")) suffix.remove_suffix(2);
  else if (suffix.size() > 1 && suffix.ends_with("B")) suffix.remove_suffix(1);
  else if (suffix == "B") suffix = "";
  int power = 0;
  if (suffix.size() == 1 && base == 10) {
    switch (std::toupper(static_cast<unsigned char>(suffix[0]))) {
      case 'K': power = 1; break;
      case 'M': power = 2; break;
      case 'G': power = 3; break;
      case 'T': power = 4; break;
      default: return InvalidArgument(fmt::format("bad {} suffix in '{}'", what, text));
    }
  } else if (!suffix.empty()) {
    return InvalidArgument(fmt::format("bad {} suffix in '{}'", what, text));
  }
  const uint64_t unit = binary ? 1024 : 1000;
  for (int i = 0; i < power; ++i) {
    if (v > UINT64_MAX / unit) return InvalidArgument(fmt::format("{} '{}' too large", what, text));
    v *= unit;
  }
  return v;
}

}  // namespace

Result<uint64_t> ParseNumber(std::string_view text) {
  int base = 10;
  const char* end = nullptr;
  auto v = Digits(text, &base, &end);
  if (v.ok() && end != text.data() + text.size()) return InvalidArgument("not a number (decimal or 0x hex)");
  return v;
}

Result<uint64_t> ParseSize(std::string_view text) { return ParseScaled(text, true, "size"); }
Result<uint64_t> ParseRate(std::string_view text) { return ParseScaled(text, false, "rate"); }

Result<std::vector<uint64_t>> ParseSizeList(std::string_view text) {
  std::vector<uint64_t> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    FP_ASSIGN_OR_RETURN(uint64_t v, ParseSize(text.substr(0, comma)));
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (out.empty()) return InvalidArgument("empty size list");
  return out;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  int i = 0;
  while (v >= 1024 && i < 6) {
    v /= 1024;
    ++i;
  }
  return fmt::format("{:.1f} {}", v, kUnits[i]);
}

}  // namespace flashpipe
