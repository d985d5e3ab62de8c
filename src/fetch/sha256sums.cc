#include "fetch/sha256sums.h"

#include <cctype>

namespace flashpipe::fetch {
namespace {

std::string_view Base(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

Result<std::string> NormalizeSha256(std::string_view hex) {
  std::string out;
  for (char c : hex) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) break;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (out.size() != 64 || hex.size() != 64) {
    return InvalidArgument(fmt::format("'{}' is not a SHA-256 (64 hex digits)", hex.substr(0, 80)));
  }
  return out;
}

Result<std::string> Sha256FromSums(std::string_view sums, std::string_view name, std::string_view what) {
  size_t line_no = 0;
  for (size_t start = 0; start < sums.size();) {
    size_t nl = sums.find('\n', start);
    std::string_view line = sums.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? sums.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::string_view digest, file;
    if (line.starts_with("SHA256 (")) {
      size_t close = line.rfind(") = ");
      if (close == std::string_view::npos) continue;
      file = line.substr(8, close - 8);
      digest = line.substr(close + 4);
    } else {
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos || sp + 1 >= line.size()) continue;
      digest = line.substr(0, sp);
      file = line.substr(sp + 1);
      if (!file.empty() && (file.front() == ' ' || file.front() == '*')) file.remove_prefix(1);
    }
    if (file != name && Base(file) != Base(name)) continue;
    auto hex = NormalizeSha256(digest);
    if (!hex.ok()) return Corrupt(fmt::format("{} line {}: {}", what, line_no, hex.status().message()));
    return *hex;
  }
  return NotFound(fmt::format("{} lists no SHA-256 for {}", what, Base(name)));
}

}  // namespace flashpipe::fetch
