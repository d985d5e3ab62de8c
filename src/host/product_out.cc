#include "host/product_out.h"

namespace flashpipe::host {
namespace {

constexpr ProductImage kImages[] = {
    {"boot", "boot.img", "boot.sig", "boot", false, ImageRole::kBootCritical},
    {nullptr, "boot_other.img", "boot.sig", "boot", true, ImageRole::kNormal},
    {"cache", "cache.img", "cache.sig", "cache", true, ImageRole::kExtra},
    {"dtbo", "dtbo.img", "dtbo.sig", "dtbo", true, ImageRole::kBootCritical},
    {"dts", "dt.img", "dt.sig", "dts", true, ImageRole::kBootCritical},
    {"odm", "odm.img", "odm.sig", "odm", true, ImageRole::kNormal},
    {"product", "product.img", "product.sig", "product", true, ImageRole::kNormal},
    {"recovery", "recovery.img", "recovery.sig", "recovery", true, ImageRole::kBootCritical},
    {"super", "super.img", "super.sig", "super", true, ImageRole::kExtra},
    {"system", "system.img", "system.sig", "system", false, ImageRole::kNormal},
    {"system_ext", "system_ext.img", "system_ext.sig", "system_ext", true, ImageRole::kNormal},
    {nullptr, "system_other.img", "system.sig", "system", true, ImageRole::kNormal},
    {"userdata", "userdata.img", "userdata.sig", "userdata", true, ImageRole::kExtra},
    {"vbmeta", "vbmeta.img", "vbmeta.sig", "vbmeta", true, ImageRole::kBootCritical},
    {"vbmeta_system", "vbmeta_system.img", "vbmeta_system.sig", "vbmeta_system", true, ImageRole::kBootCritical},
    {"vendor", "vendor.img", "vendor.sig", "vendor", true, ImageRole::kNormal},
    {"vendor_boot", "vendor_boot.img", "vendor_boot.sig", "vendor_boot", true, ImageRole::kBootCritical},
    {nullptr, "vendor_other.img", "vendor.sig", "vendor", true, ImageRole::kNormal},
};

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool Space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && Space(s[i])) ++i;
  return i;
}

size_t SkipToken(std::string_view s, size_t i) {
  while (i < s.size() && !Space(s[i])) ++i;
  return i;
}

// "NAME = VALUE" from position i: NAME is one whitespace-free token, taken
// whole when "=" follows it after optional spaces, else up to its last "=".
// One pass over the text, no backtracking: a line of any length costs its
// length (a recursive regex here once overflowed the stack on a long line).
bool NameValue(std::string_view s, size_t i, Requirement* r, std::string* value) {
  size_t b = SkipSpace(s, i);
  size_t e = SkipToken(s, b);
  if (e == b) return false;
  size_t after = SkipSpace(s, e);
  size_t value_at;
  if (after < s.size() && s[after] == '=') {
    r->name = std::string(s.substr(b, e - b));
    value_at = after + 1;
  } else {
    size_t eq = s.substr(b, e - b).rfind('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    r->name = std::string(s.substr(b, eq));
    value_at = b + eq + 1;
  }
  *value = std::string(s.substr(SkipSpace(s, value_at)));
  return true;
}

// "require NAME=..." / "reject NAME=..." (the word and at least one space).
bool Keyword(std::string_view s, std::string_view word) {
  return s.starts_with(word) && s.size() > word.size() && Space(s[word.size()]);
}

}  // namespace

std::span<const ProductImage> ProductImages() { return kImages; }

std::optional<Requirement> ParseRequirement(std::string_view line) {
  if (line.size() > kMaxRequirementLine) return std::nullopt;
  Requirement r;
  std::string options;
  bool parsed = false;
  if (Keyword(line, "require") || Keyword(line, "reject")) {
    r.reject = line.starts_with("reject");
    parsed = NameValue(line, SkipToken(line, 0), &r, &options);
  }
  if (!parsed) {
    r.reject = false;
    parsed = NameValue(line, 0, &r, &options);
  }
  constexpr std::string_view kForProduct = "require-for-product:";
  if (!parsed && line.starts_with(kForProduct)) {
    size_t b = SkipSpace(line, kForProduct.size());
    size_t e = SkipToken(line, b);
    if (e > b && e < line.size()) {
      r.product = std::string(line.substr(b, e - b));
      parsed = NameValue(line, e, &r, &options);
    }
  }
  if (!parsed) return std::nullopt;
  if (r.name == "board") r.name = "product";
  for (size_t start = 0;;) {
    size_t bar = options.find('|', start);
    r.options.push_back(Trim(options.substr(start, bar - start)));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return r;
}

bool RequirementMet(const Requirement& r, std::string_view value) {
  bool match = false;
  for (const std::string& o : r.options) {
    bool prefix = !o.empty() && o.back() == '*' && value.starts_with(std::string_view(o).substr(0, o.size() - 1));
    if (o == value || prefix) match = true;
  }
  return match != r.reject;
}

}  // namespace flashpipe::host
