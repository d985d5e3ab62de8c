// What `fastboot flashall` takes from a product folder ($ANDROID_PRODUCT_OUT),
// as the AOSP client 29.0.6 does:
//   - the image table: each FILE.img goes to its partition; boot-critical
//     images first, then the others; "extra" ones (cache, super, userdata)
//     never; the *_other.img images go to the other slot (secondary); boot
//     and system must be there, the rest are optional;
//   - android-info.txt: lines "require VAR=A|B", "reject VAR=A", "VAR=A"
//     and "require-for-product:PRODUCT VAR=A" checked against getvar VAR
//     ("board" means "product"; a trailing '*' matches a prefix);
//     "require partition-exists=P" makes P's image mandatory.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace flashpipe::host {

enum class ImageRole { kBootCritical, kNormal, kExtra };

struct ProductImage {
  const char* nickname;  // nullptr: a secondary image (for the other slot)
  const char* file;
  const char* signature;
  const char* partition;
  bool optional;
  ImageRole role;
  bool secondary() const { return nickname == nullptr; }
};

std::span<const ProductImage> ProductImages();

struct Requirement {
  std::string name;     // the variable ("board" becomes "product")
  std::string product;  // require-for-product: only for this product
  bool reject = false;
  std::vector<std::string> options;
};

// nullopt: the line is not a requirement (a syntax error the client reports),
// or is longer than kMaxRequirementLine. Linear in the line's length.
inline constexpr size_t kMaxRequirementLine = 4096;
std::optional<Requirement> ParseRequirement(std::string_view line);
// Whether `value` passes (options matched, reject inverting).
bool RequirementMet(const Requirement& r, std::string_view value);

}  // namespace flashpipe::host
