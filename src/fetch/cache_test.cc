#include "fetch/cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testing/temp_dir.h"

namespace flashpipe::fetch {
namespace {

RemoteStat Stat(uint64_t size = 1 << 20, std::string etag = "\"v1\"") {
  return {.url = "http://h/x.img", .effective_url = "http://h/x.img", .size = size, .etag = etag, .validator = etag,
          .ranges = true};
}

TEST(CacheMeta, RoundTrips) {
  EntryMeta m{.url = "http://h/x", .size = 100, .etag = "\"e\"", .sha256 = std::string(64, 'a'),
              .spans = {{0, 10}, {20, 30}}, .synced = true, .boot_id = "b"};
  auto back = ParseMeta(FormatMeta(m));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->url, m.url);
  EXPECT_EQ(back->etag, m.etag);
  EXPECT_EQ(back->last_modified, "");
  EXPECT_EQ(back->spans, m.spans);
  EXPECT_TRUE(back->synced);
}

TEST(CacheMeta, RefusesSpansOutOfOrderOrPastTheSize) {
  EXPECT_FALSE(ParseMeta("flashpipe-cache 1\nsize 10\nspan 0 11\n").ok());
  EXPECT_FALSE(ParseMeta("flashpipe-cache 1\nsize 10\nspan 5 8\nspan 0 2\n").ok());
  EXPECT_FALSE(ParseMeta("size 10\n").ok());
  EXPECT_FALSE(ParseMeta("flashpipe-cache 1\nsize 10").ok());  // cut short
}

TEST(CacheEntry, KeepsSpansAcrossOpensOfTheSameVersionOnly) {
  testing::TempDir dir;
  CacheOptions o{.dir = dir.path() + "/c"};
  {
    auto e = Entry::Open(o, Stat());
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE((*e)->TryLockFetch());
    EntryMeta m = (*e)->Load();
    EXPECT_TRUE(m.spans.empty());
    m.spans = {{0, 4096}};
    ASSERT_TRUE((*e)->Save(m, true).ok());
  }
  auto again = Entry::Open(o, Stat());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->Load().spans.size(), 1u);
  auto other = Entry::Open(o, Stat(1 << 20, "\"v2\""));  // a new version: a new key, nothing held
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->key(), (*again)->key());
  EXPECT_TRUE((*other)->Load().spans.empty());
  struct stat st;
  ASSERT_EQ(::stat(o.dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(CacheEntry, OneFetcherAtATime) {
  testing::TempDir dir;
  CacheOptions o{.dir = dir.path()};
  auto a = Entry::Open(o, Stat());
  auto b = Entry::Open(o, Stat());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE((*a)->TryLockFetch());
  EXPECT_FALSE((*b)->TryLockFetch());
  a->reset();
  EXPECT_TRUE((*b)->TryLockFetch());
}

TEST(CacheEntry, RefusesALinkPlantedAtItsName) {
  testing::TempDir dir;
  CacheOptions o{.dir = dir.path()};
  std::string key = EntryKey(Stat());
  std::string victim = dir.File("victim");
  { UniqueFd fd(::open(victim.c_str(), O_CREAT | O_WRONLY, 0600)); }
  ASSERT_EQ(::symlink(victim.c_str(), dir.File(key + ".data").c_str()), 0);
  auto e = Entry::Open(o, Stat());
  ASSERT_FALSE(e.ok());
  struct stat st;
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);  // never followed, never grown to the entry's size
}

TEST(CacheEntry, RefusesADirectoryOthersMayWrite) {
  testing::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  auto e = Entry::Open({.dir = dir.path()}, Stat());
  EXPECT_FALSE(e.ok());
}

TEST(Cache, EvictsLeastRecentlyUsedButNeverInUse) {
  testing::TempDir dir;
  CacheOptions o{.dir = dir.path()};
  auto fill = [&](const std::string& etag) {
    auto e = Entry::Open(o, Stat(1 << 20, etag));
    EXPECT_TRUE(e.ok());
    std::vector<uint8_t> data(1 << 20, 0x5a);
    EXPECT_EQ(::pwrite((*e)->fd(), data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
    EXPECT_TRUE((*e)->TryLockFetch());
    EntryMeta m = (*e)->Load();
    m.spans = {{0, 1 << 20}};
    EXPECT_TRUE((*e)->Save(m, true).ok());
    return std::move(*e);
  };
  fill("\"a\"").reset();
  auto b = fill("\"b\"");  // kept open: in use
  fill("\"c\"").reset();
  auto list = ListCache(dir.path());
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 3u);
  auto removed = CollectCache(dir.path(), 1 << 20);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  auto after = ListCache(dir.path());
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ(after->front().key, b->key());
  EXPECT_TRUE(after->front().in_use);
}

}  // namespace
}  // namespace flashpipe::fetch
