// flashpipe cache ls|rm|gc: the download cache of images fetched from URLs
// (src/fetch/cache.h). Entries in use by a running flashpipe are listed as
// such and never removed.
#include <cstdio>
#include <ctime>

#include "base/json.h"
#include "base/units.h"
#include "fetch/cache.h"
#include "fetch/url.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace flashpipe::tools {
namespace {

uint64_t HeldBytes(const fetch::EntryMeta& m) {
  uint64_t n = 0;
  for (const fetch::ByteSpan& s : m.spans) n += s.size();
  return n;
}

std::string ListingJson(const std::vector<fetch::CacheListing>& list, const std::string& dir) {
  std::string entries;
  for (const auto& l : list) {
    entries += fmt::format(
        "{}{{\"key\": {}, \"url\": {}, \"size\": {}, \"bytes_held\": {}, \"complete\": {}, \"disk_bytes\": {}, "
        "\"etag\": {}, \"last_modified\": {}, \"sha256\": {}, \"last_used\": {}, \"in_use\": {}}}",
        entries.empty() ? "" : ", ", JsonString(l.key), JsonString(l.meta.url), l.meta.size, HeldBytes(l.meta),
        HeldBytes(l.meta) == l.meta.size, l.disk_bytes, JsonString(l.meta.etag), JsonString(l.meta.last_modified),
        l.meta.sha256.empty() ? "null" : JsonString(l.meta.sha256), l.last_used, l.in_use);
  }
  return fmt::format("{{\"schema\": \"flashpipe-cache\", \"schema_version\": 1, \"dir\": {}, \"entries\": [{}]}}",
                     JsonString(dir), entries);
}

int List(const std::string& dir, const std::string& json) {
  auto list = fetch::ListCache(dir);
  if (!list.ok()) return ExitWith("cache ls", list.status());
  if (!json.empty()) return ExitWith("cache ls", WriteJson(json, ListingJson(*list, dir)));
  uint64_t total = 0;
  for (const auto& l : *list) {
    total += l.disk_bytes;
    char when[32] = "-";
    std::time_t t = l.last_used;
    std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M", std::localtime(&t));
    std::printf("%s  %9s of %9s  %s%s  %s\n", l.key.substr(0, 12).c_str(), FormatBytes(HeldBytes(l.meta)).c_str(),
                FormatBytes(l.meta.size).c_str(), when, l.in_use ? "  in use" : "", l.meta.url.c_str());
  }
  std::printf("%zu entr%s, %s on disk in %s\n", list->size(), list->size() == 1 ? "y" : "ies", FormatBytes(total).c_str(),
              dir.c_str());
  return ExitWith("cache ls", FlushStdout());
}

// Keys named by a key (or its first characters) or by a URL (every version of it).
Result<std::vector<std::string>> Select(const std::string& dir, const std::vector<std::string>& names) {
  FP_ASSIGN_OR_RETURN(auto list, fetch::ListCache(dir));
  std::vector<std::string> keys;
  for (const std::string& n : names) {
    size_t before = keys.size();
    for (const auto& l : list) {
      bool match = fetch::IsUrl(n) ? l.meta.url == fetch::DisplayUrl(n) : (n.size() >= 6 && l.key.starts_with(n));
      if (match) keys.push_back(l.key);
    }
    if (keys.size() == before) return NotFound(fmt::format("no cache entry for '{}'", n));
  }
  return keys;
}

int Remove(const std::string& dir, const std::vector<std::string>& names, bool all) {
  if (names.empty() && !all) return ExitWith("cache rm", InvalidArgument("name entries (KEY or URL) or give --all"));
  std::vector<std::string> keys;
  if (!all) {
    auto k = Select(dir, names);
    if (!k.ok()) return ExitWith("cache rm", k.status());
    keys = *k;
  }
  auto removed = fetch::RemoveFromCache(dir, keys);
  if (!removed.ok()) return ExitWith("cache rm", removed.status());
  size_t wanted = all ? removed->size() : keys.size();
  std::fprintf(stderr, "flashpipe cache rm: removed %zu entr%s\n", removed->size(), removed->size() == 1 ? "y" : "ies");
  if (removed->size() < wanted) return ExitWith("cache rm", Busy(fmt::format("{} in use, kept", wanted - removed->size())));
  return 0;
}

int Collect(const std::string& dir, const std::string& max) {
  auto limit = ParseSize(max);
  if (!limit.ok()) return ExitWith("cache gc", limit.status());
  auto removed = fetch::CollectCache(dir, *limit);
  if (!removed.ok()) return ExitWith("cache gc", removed.status());
  std::fprintf(stderr, "flashpipe cache gc: removed %zu entr%s\n", removed->size(), removed->size() == 1 ? "y" : "ies");
  return 0;
}

}  // namespace

int RunCache(int argc, char** argv) {
  CLI::App app{"The download cache of images fetched from http(s) URLs", CommandName(argv[0])};
  app.require_subcommand(1);
  std::string dir, json, max = "20G";
  std::vector<std::string> names;
  bool all = false;
  app.add_option("--cache", dir, "the cache (default $XDG_CACHE_HOME/flashpipe)");
  CLI::App* ls = app.add_subcommand("ls", "list the entries, least recently used first");
  AddJsonFlag(*ls, json, "the entries");
  CLI::App* rm = app.add_subcommand("rm", "remove entries (not those in use)");
  rm->add_option("ENTRY", names, "a key (its first 6 or more characters) or a URL (all its versions)");
  rm->add_flag("--all", all, "every entry not in use");
  CLI::App* gc = app.add_subcommand("gc", "remove least recently used entries until the cache fits --max-size");
  gc->add_option("--max-size", max, "what the cache may hold (default 20G)");
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  if (dir.empty()) dir = fetch::DefaultCacheDir();
  if (ls->parsed()) return List(dir, json);
  if (rm->parsed()) return Remove(dir, names, all);
  return Collect(dir, max);
}

}  // namespace flashpipe::tools
