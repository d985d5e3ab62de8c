#include "fetch/url.h"

#include <algorithm>
#include <cctype>

namespace flashpipe::fetch {
namespace {

bool StartsWithI(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

// Where the authority ("user@host:port") starts and ends.
std::pair<size_t, size_t> Authority(std::string_view url) {
  size_t start = url.find("://");
  if (start == std::string_view::npos) return {0, 0};
  start += 3;
  size_t end = url.find_first_of("/?#", start);
  return {start, end == std::string_view::npos ? url.size() : end};
}

}  // namespace

bool IsUrl(std::string_view spec) { return StartsWithI(spec, "http://") || StartsWithI(spec, "https://"); }

std::string DisplayUrl(std::string_view url) {
  auto [start, end] = Authority(url);
  std::string_view auth = url.substr(start, end - start);
  size_t at = auth.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, start)) + std::string(url.substr(start + at + 1));
}

std::string_view UrlPath(std::string_view url) {
  auto [start, end] = Authority(url);
  size_t q = url.find_first_of("?#", end);
  return url.substr(0, q);
}

std::string UrlBasename(std::string_view url) {
  std::string_view path = UrlPath(url);
  auto [start, end] = Authority(url);
  if (path.size() <= end) return "";
  size_t slash = path.rfind('/');
  return std::string(path.substr(slash + 1));
}

std::string WithSuffix(std::string_view url, std::string_view suffix) {
  std::string_view path = UrlPath(url);
  return std::string(path) + std::string(suffix) + std::string(url.substr(path.size()));
}

}  // namespace flashpipe::fetch
