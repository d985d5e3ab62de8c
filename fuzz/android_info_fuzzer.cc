// libFuzzer target for android-info.txt requirement lines (ParseRequirement,
// RequirementMet), the text `fastboot flashall` reads from a product folder.
// Besides "no crash, no undefined behaviour", it checks the promises: a line
// longer than kMaxRequirementLine is refused; an accepted line has a name
// without whitespace and at least one option; options hold no '|'.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/product_out.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashpipe::host;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view value;
  size_t nl = text.find('\n');
  if (nl != std::string_view::npos) {  // the first line is a value to match
    value = text.substr(0, nl);
    text = text.substr(nl + 1);
  }
  auto r = ParseRequirement(text);
  if (!r) return 0;
  if (text.size() > kMaxRequirementLine || r->name.empty() || r->options.empty()) std::abort();
  for (char c : r->name)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') std::abort();
  for (const std::string& o : r->options)
    if (o.find('|') != std::string::npos) std::abort();
  (void)RequirementMet(*r, value);
  return 0;
}
