#include "base/json.h"

#include <fmt/format.h>

#include "base/utf8.h"

namespace flashpipe {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    size_t n = Utf8Length(s, i);
    if (n == 0) {
      out += "\\ufffd";  // not UTF-8: the replacement character, so the JSON stays valid
      ++i;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
      ++i;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out + "\"";
}

std::string JsonSchemaMembers(std::string_view name, int version) {
  return fmt::format("\"schema\": \"flashpipe-{}\", \"schema_version\": {}", name, version);
}

}  // namespace flashpipe
