// URLs as image specs: which specs are URLs, what to show of one (never its
// password), the names tried beside it (a bmap, a signature), and the file
// name a SHA256SUMS line uses. Pure string work, no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace flashpipe::fetch {

// "http://..." or "https://..." (scheme case-insensitive).
bool IsUrl(std::string_view spec);

// The URL with any "user:password@" removed, for messages, --json and the
// cache listing.
std::string DisplayUrl(std::string_view url);

// The URL without its "?query" and "#fragment".
std::string_view UrlPath(std::string_view url);

// The last path component ("img.xz" of "https://h/a/img.xz?x=1"), "" for a
// URL that ends in '/'.
std::string UrlBasename(std::string_view url);

// `url` with `suffix` appended to its path (before any query):
// ("https://h/a.img?t=1", ".bmap") -> "https://h/a.img.bmap?t=1".
std::string WithSuffix(std::string_view url, std::string_view suffix);

}  // namespace flashpipe::fetch
