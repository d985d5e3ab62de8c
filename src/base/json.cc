#include "base/json.h"

#include <fmt/format.h>

namespace flashpipe {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonSchemaMembers(std::string_view name, int version) {
  return fmt::format("\"schema\": \"flashpipe-{}\", \"schema_version\": {}", name, version);
}

}  // namespace flashpipe
