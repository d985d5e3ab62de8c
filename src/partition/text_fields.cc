#include "partition/text_fields.h"

#include <cctype>
#include <charconv>
#include <vector>

#include <fmt/format.h>

namespace flashpipe::partition {
namespace {

struct Suffix {
  const char* text;
  uint64_t factor;
};

constexpr uint64_t kKi = 1024;
constexpr Suffix kSuffixes[] = {
    {"KiB", kKi}, {"MiB", kKi * kKi}, {"GiB", kKi * kKi * kKi}, {"TiB", kKi * kKi * kKi * kKi},
    {"PiB", kKi * kKi * kKi * kKi * kKi},
    {"K", kKi}, {"M", kKi * kKi}, {"G", kKi * kKi * kKi}, {"T", kKi * kKi * kKi * kKi},
    {"P", kKi * kKi * kKi * kKi * kKi},
    {"k", kKi}, {"m", kKi * kKi}, {"g", kKi * kKi * kKi},
    {"KB", 1000}, {"MB", 1000'000}, {"GB", 1000'000'000}, {"TB", 1000'000'000'000}, {"PB", 1000'000'000'000'000},
};

constexpr const char* kAttributeNames[] = {"RequiredPartition", "NoBlockIOProtocol", "LegacyBIOSBootable"};

}  // namespace

Result<Amount> ParseAmount(std::string_view text, PlainUnit plain) {
  auto bad = [&](std::string why) {
    return InvalidArgument(fmt::format("'{}' is not a size ({})", text.substr(0, 40), why));
  };
  if (text.empty()) return bad("empty");
  int base = 10;
  std::string_view digits = text;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    base = 16;
    digits.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (ec == std::errc::result_out_of_range) return bad("too large");
  if (ec != std::errc() || end == digits.data()) return bad("a number, optionally with K, M, G, T or KiB, MiB, ...");
  std::string_view suffix(end, digits.data() + digits.size() - end);
  if (suffix.empty()) return Amount{v, plain == PlainUnit::kBytes};
  if (base == 16) return bad("no suffix after a hex number");
  for (const Suffix& s : kSuffixes) {
    if (suffix != s.text) continue;
    if (v > UINT64_MAX / s.factor) return bad("too large");
    return Amount{v * s.factor, true};
  }
  return bad(fmt::format("unknown suffix '{}'", suffix.substr(0, 10)));
}

std::string FormatExactBytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes == 0) return "0";
  std::string out = std::to_string(bytes);
  uint64_t v = bytes;
  for (const char* unit : kUnits) {
    if (v % kKi != 0) break;
    v /= kKi;
    out = fmt::format("{}{}", v, unit);
  }
  return out;
}

Result<uint64_t> ParseAttributes(std::string_view text) {
  uint64_t bits = 0;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\t') ++j;
    std::string_view word = text.substr(i, j - i);
    i = j;
    if (word.empty()) continue;
    bool known = false;
    for (uint64_t b = 0; b < std::size(kAttributeNames); ++b) {
      if (word == kAttributeNames[b]) bits |= uint64_t{1} << b, known = true;
    }
    if (known) continue;
    if (!word.starts_with("GUID:")) {
      return InvalidArgument(fmt::format("attrs: unknown attribute '{}' (RequiredPartition, NoBlockIOProtocol, "
                                         "LegacyBIOSBootable, GUID:N)", word.substr(0, 40)));
    }
    std::string_view list = word.substr(5);
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view n = list.substr(0, comma);
      unsigned bit = 64;
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), bit);
      if (ec != std::errc() || end != n.data() + n.size() || bit > 63) {
        return InvalidArgument(fmt::format("attrs: '{}' is not a bit number 0-63", n.substr(0, 20)));
      }
      bits |= uint64_t{1} << bit;
      list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
    }
  }
  return bits;
}

std::string FormatAttributes(uint64_t attributes) {
  std::string out;
  for (uint64_t b = 0; b < std::size(kAttributeNames); ++b) {
    if (attributes & (uint64_t{1} << b)) out += (out.empty() ? "" : " ") + std::string(kAttributeNames[b]);
  }
  std::string guid_bits;
  for (unsigned b = std::size(kAttributeNames); b < 64; ++b) {
    if (attributes & (uint64_t{1} << b)) guid_bits += (guid_bits.empty() ? "" : ",") + std::to_string(b);
  }
  if (!guid_bits.empty()) out += (out.empty() ? "GUID:" : " GUID:") + guid_bits;
  return out;
}

}  // namespace flashpipe::partition
