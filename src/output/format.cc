#include "output/format.h"

namespace flashpipe::output {
namespace {

struct Entry {
  Format format;
  std::string_view name;
  std::string_view suffixes[2];
};

constexpr Entry kFormats[] = {
    {Format::kRaw, "raw", {}},
    {Format::kSparse, "sparse", {".simg", ".sparse"}},
    {Format::kZstd, "zstd", {".zst", ".zstd"}},
    {Format::kXz, "xz", {".xz", {}}},
    {Format::kGzip, "gzip", {".gz", {}}},
};

}  // namespace

Result<Format> ParseFormat(std::string_view name) {
  for (const Entry& e : kFormats) {
    if (e.name == name) return e.format;
  }
  return InvalidArgument(fmt::format("unknown output format '{}' (raw, sparse, zstd, xz, gzip)", name));
}

Format FormatForPath(std::string_view path) {
  for (const Entry& e : kFormats) {
    for (std::string_view suffix : e.suffixes) {
      if (!suffix.empty() && path.size() > suffix.size() && path.ends_with(suffix)) return e.format;
    }
  }
  return Format::kRaw;
}

std::string_view FormatName(Format format) {
  for (const Entry& e : kFormats) {
    if (e.format == format) return e.name;
  }
  return "?";
}

bool IsCompressed(Format format) {
  return format == Format::kZstd || format == Format::kXz || format == Format::kGzip;
}

}  // namespace flashpipe::output
