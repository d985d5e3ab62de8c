#include "input/bmap.h"

#include <openssl/evp.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include <pugixml.hpp>

namespace flashpipe::input {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  s = Trim(s);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

Result<uint64_t> Field(const pugi::xml_node& root, const char* element, std::string_view name) {
  pugi::xml_node n = root.child(element);
  if (!n) return Corrupt(fmt::format("{}: missing <{}>", name, element));
  uint64_t v = 0;
  if (!ParseU64(n.child_value(), &v)) {
    return Corrupt(fmt::format("{}: <{}> is not a number: '{}'", name, element, n.child_value()));
  }
  return v;
}

Result<std::string> Hex(std::string_view text, size_t size, std::string_view what) {
  std::string s(Trim(text));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool hex = s.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (s.size() != size || !hex) {
    return Corrupt(fmt::format("{}: checksum '{}' is not {} hex digits", what, text, size));
  }
  return s;
}

struct Version {
  int major = 0, minor = 0;
  bool NewStyle() const { return major >= 2 || (major == 1 && minor == 4); }
};

Result<Version> ParseVersion(std::string_view v, std::string_view name) {
  Version out;
  auto dot = v.find('.');
  uint64_t major = 0, minor = 0;
  if (dot == std::string_view::npos || !ParseU64(v.substr(0, dot), &major) ||
      !ParseU64(v.substr(dot + 1), &minor)) {
    return Corrupt(fmt::format("{}: bad bmap version '{}'", name, v));
  }
  if (major > 2 || major == 0) {
    return Unsupported(fmt::format("{}: bmap version {} is not supported (1.0 to 2.x are)", name, v));
  }
  out.major = static_cast<int>(major);
  out.minor = static_cast<int>(std::min<uint64_t>(minor, 1000));
  return out;
}

Result<BmapRange> ParseRange(const pugi::xml_node& n, const Bmap& b, const char* attr, size_t hex_size,
                             std::string_view where) {
  std::string_view text = Trim(n.child_value());
  BmapRange r;
  auto dash = text.find('-');
  bool ok = dash == std::string_view::npos
                ? ParseU64(text, &r.first) && (r.last = r.first, true)
                : ParseU64(text.substr(0, dash), &r.first) && ParseU64(text.substr(dash + 1), &r.last);
  if (!ok) return Corrupt(fmt::format("{}: bad range '{}'", where, text));
  if (r.first > r.last) return Corrupt(fmt::format("{}: range '{}' ends before it starts", where, text));
  if (r.last >= b.blocks_count) {
    return Corrupt(fmt::format("{}: range '{}' goes past the last block {}", where, text, b.blocks_count - 1));
  }
  if (attr != nullptr && n.attribute(attr)) {
    FP_ASSIGN_OR_RETURN(r.checksum, Hex(n.attribute(attr).value(), hex_size, where));
  }
  return r;
}

Status ParseRanges(const pugi::xml_node& root, Bmap* b, const char* attr, size_t hex_size, std::string_view name) {
  pugi::xml_node map = root.child("BlockMap");
  if (!map) return Corrupt(fmt::format("{}: missing <BlockMap>", name));
  uint64_t mapped = 0;
  size_t index = 0;
  for (pugi::xml_node n : map.children("Range")) {
    std::string where = fmt::format("{}: range {}", name, index++);
    FP_ASSIGN_OR_RETURN(BmapRange r, ParseRange(n, *b, attr, hex_size, where));
    if (!b->ranges.empty() && r.first <= b->ranges.back().last) {
      return Corrupt(fmt::format("{} (blocks {}-{}) overlaps or precedes the previous range", where, r.first, r.last));
    }
    mapped += r.last - r.first + 1;
    b->ranges.push_back(std::move(r));
  }
  if (mapped != b->mapped_blocks) {
    return Corrupt(fmt::format("{}: ranges cover {} blocks but MappedBlocksCount is {}", name, mapped,
                               b->mapped_blocks));
  }
  return Status::Ok();
}

Status CheckFileChecksum(std::string_view text, const pugi::xml_node& root, const char* element,
                         const std::string& type, size_t hex_size, std::string_view name) {
  pugi::xml_node n = root.child(element);
  if (!n) return Corrupt(fmt::format("{}: missing <{}>", name, element));
  std::string_view raw = Trim(n.child_value());
  FP_ASSIGN_OR_RETURN(std::string want, Hex(raw, hex_size, fmt::format("{}: <{}>", name, element)));
  size_t at = text.find(raw);
  if (at == std::string_view::npos) return Corrupt(fmt::format("{}: <{}> text not found", name, element));
  std::string zeroed(text);
  zeroed.replace(at, raw.size(), raw.size(), '0');
  FP_ASSIGN_OR_RETURN(Digest d, Digest::Create(type));
  d.Update({reinterpret_cast<const uint8_t*>(zeroed.data()), zeroed.size()});
  std::string got = d.HexFinal();
  if (got != want) {
    return Corrupt(fmt::format("{}: bmap file checksum mismatch: {} {} but <{}> says {}", name, type, got,
                               element, want));
  }
  return Status::Ok();
}

}  // namespace

uint64_t Bmap::RangeEnd(const BmapRange& r) const {
  return std::min(image_size, (r.last + 1) * block_size);
}

std::string Bmap::RangeLabel(size_t index) const {
  const BmapRange& r = ranges[index];
  return fmt::format("bmap range {} (blocks {}-{}, bytes {:#x}-{:#x})", index, r.first, r.last, RangeBegin(r),
                     RangeEnd(r));
}

Result<Bmap> ParseBmap(std::string_view text, std::string_view name) {
  pugi::xml_document doc;
  pugi::xml_parse_result pr = doc.load_buffer(text.data(), text.size());
  if (!pr) {
    return Corrupt(fmt::format("{}: not valid XML at byte {}: {}", name, pr.offset, pr.description()));
  }
  pugi::xml_node root = doc.child("bmap");
  if (!root) return Corrupt(fmt::format("{}: no <bmap> root element", name));
  Bmap b;
  b.version = root.attribute("version").value();
  FP_ASSIGN_OR_RETURN(Version v, ParseVersion(b.version, name));
  FP_ASSIGN_OR_RETURN(b.image_size, Field(root, "ImageSize", name));
  FP_ASSIGN_OR_RETURN(b.block_size, Field(root, "BlockSize", name));
  FP_ASSIGN_OR_RETURN(b.blocks_count, Field(root, "BlocksCount", name));
  FP_ASSIGN_OR_RETURN(b.mapped_blocks, Field(root, "MappedBlocksCount", name));
  if (b.block_size == 0 || b.block_size > (1u << 30)) {
    return Corrupt(fmt::format("{}: BlockSize {} is out of range", name, b.block_size));
  }
  if (b.blocks_count != (b.image_size + b.block_size - 1) / b.block_size) {
    return Corrupt(fmt::format("{}: BlocksCount {} != ceil(ImageSize {} / BlockSize {})", name, b.blocks_count,
                               b.image_size, b.block_size));
  }
  const char* attr = nullptr;
  const char* file_element = nullptr;
  if (v.NewStyle()) {
    pugi::xml_node t = root.child("ChecksumType");
    if (!t) return Corrupt(fmt::format("{}: version {} needs <ChecksumType>", name, b.version));
    b.checksum_type = std::string(Trim(t.child_value()));
    attr = "chksum";
    file_element = "BmapFileChecksum";
  } else if (v.major == 1 && v.minor == 3) {
    b.checksum_type = "sha1";
    attr = "sha1";
    file_element = "BmapFileSHA1";
  }
  size_t hex_size = 0;
  if (!b.checksum_type.empty()) {
    FP_ASSIGN_OR_RETURN(Digest d, Digest::Create(b.checksum_type));
    hex_size = d.hex_size();
    FP_RETURN_IF_ERROR(CheckFileChecksum(text, root, file_element, b.checksum_type, hex_size, name));
  }
  FP_RETURN_IF_ERROR(ParseRanges(root, &b, attr, hex_size, name));
  return b;
}

Result<Bmap> LoadBmap(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError(fmt::format("cannot open bmap file {}", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoError(fmt::format("cannot read bmap file {}", path));
  std::string text = ss.str();
  if (text.size() > (64u << 20)) return Corrupt(fmt::format("{}: bmap file is over 64 MiB", path));
  return ParseBmap(text, path);
}

struct Digest::Impl {
  const EVP_MD* md = nullptr;
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Digest::Digest() : impl_(std::make_unique<Impl>()) {}
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;
Digest::~Digest() = default;

Result<Digest> Digest::Create(std::string_view name) {
  Digest d;
  d.impl_->md = EVP_get_digestbyname(std::string(name).c_str());
  if (d.impl_->md == nullptr) return Unsupported(fmt::format("unknown checksum type '{}'", name));
  d.impl_->ctx = EVP_MD_CTX_new();
  if (d.impl_->ctx == nullptr || EVP_DigestInit_ex(d.impl_->ctx, d.impl_->md, nullptr) != 1) {
    return Internal(fmt::format("cannot start a {} digest", name));
  }
  return d;
}

void Digest::Update(std::span<const uint8_t> data) { EVP_DigestUpdate(impl_->ctx, data.data(), data.size()); }

std::string Digest::HexFinal() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &size);
  EVP_DigestInit_ex(impl_->ctx, impl_->md, nullptr);
  std::string hex;
  hex.reserve(size * 2);
  for (unsigned i = 0; i < size; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

size_t Digest::hex_size() const { return static_cast<size_t>(EVP_MD_get_size(impl_->md)) * 2; }

}  // namespace flashpipe::input
