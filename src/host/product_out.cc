#include "host/product_out.h"

#include <regex>

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

}  // namespace

std::span<const ProductImage> ProductImages() { return kImages; }

std::optional<Requirement> ParseRequirement(std::string_view text) {
  static const std::regex require_or_reject(R"((require\s+|reject\s+)?\s*(\S+)\s*=\s*(.*))");
  static const std::regex for_product(R"(require-for-product:\s*(\S+)\s+(\S+)\s*=\s*(.*))");
  std::string line(text);
  std::smatch m;
  Requirement r;
  if (std::regex_match(line, m, require_or_reject)) {
    r.reject = Trim(m[1]) == "reject";
  } else if (std::regex_match(line, m, for_product)) {
    r.product = m[1];
  } else {
    return std::nullopt;
  }
  r.name = m[2];
  if (r.name == "board") r.name = "product";
  std::string options = m[3];
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
