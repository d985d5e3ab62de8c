#include "base/page_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "testing/temp_dir.h"

namespace flashpipe {
namespace {

TEST(PageCacheTest, AFileJustWrittenIsCachedAndOneDroppedIsNot) {
  flashpipe::testing::TempDir dir;
  std::string path = dir.File("f");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> bytes(8 << 20, 0x5a);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  auto cached = CachedBytes(fd, 0, bytes.size());
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  EXPECT_EQ(*cached, bytes.size());
  EXPECT_TRUE(MostlyCached(fd, 0, bytes.size()));
  auto part = CachedBytes(fd, 1 << 20, 1 << 20);  // a window counts only its own pages
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(*part, 1u << 20);

  ASSERT_EQ(::fdatasync(fd), 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  cached = CachedBytes(fd, 0, bytes.size());
  ASSERT_TRUE(cached.ok());
  if (*cached == bytes.size()) GTEST_SKIP() << "this filesystem keeps its pages (tmpfs)";
  EXPECT_LT(*cached, bytes.size() / 2);
  EXPECT_FALSE(MostlyCached(fd, 0, bytes.size()));
  ::close(fd);
}

TEST(PageCacheTest, HolesAreNotCountedAsStored) {
  flashpipe::testing::TempDir dir;
  std::string path = dir.File("sparse");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> bytes(1 << 20, 1);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 64 << 20), static_cast<ssize_t>(bytes.size()));
  // 65 MiB long, 1 MiB stored and cached: mostly cached.
  EXPECT_TRUE(MostlyCached(fd, 0, 65 << 20));
  EXPECT_FALSE(MostlyCached(-1, 0, 1));
  ::close(fd);
}

}  // namespace
}  // namespace flashpipe
