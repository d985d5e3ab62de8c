#include "base/fd_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/unique_fd.h"

namespace flashpipe {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

UniqueFd TempFile() {
  char name[] = "/tmp/fd_io_test.XXXXXX";
  UniqueFd fd(::mkstemp(name));
  ::unlink(name);
  return fd;
}

TEST(FdIo, PwriteThenPreadRoundTrip) {
  UniqueFd fd = TempFile();
  ASSERT_TRUE(PwriteAll(fd.get(), Bytes("hello"), 4096, "t").ok());
  std::vector<uint8_t> buf(5);
  ASSERT_TRUE(PreadExact(fd.get(), buf, 4096, "t").ok());
  EXPECT_EQ(std::string(buf.begin(), buf.end()), "hello");
}

TEST(FdIo, PreadUpToStopsAtEndOfFile) {
  UniqueFd fd = TempFile();
  ASSERT_TRUE(WriteAll(fd.get(), Bytes("abc"), "t").ok());
  std::vector<uint8_t> buf(10);
  auto got = PreadUpTo(fd.get(), buf, 1, "t");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, 2u);
}

TEST(FdIo, PreadExactNamesFileAndOffsetAtEarlyEnd) {
  UniqueFd fd = TempFile();
  ASSERT_TRUE(WriteAll(fd.get(), Bytes("abc"), "t").ok());
  std::vector<uint8_t> buf(10);
  Status s = PreadExact(fd.get(), buf, 0, "image.simg");
  EXPECT_EQ(s.code(), Code::kCorrupt);
  EXPECT_EQ(s.message(), "read image.simg at byte 0x3: unexpected end of file");
}

TEST(FdIo, WriteErrorCarriesErrnoNameAndOffset) {
  UniqueFd fd(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  Status s = PwriteAll(fd.get(), Bytes("x"), 0x200, "/dev/full");
  EXPECT_EQ(s.code(), Code::kNoSpace);  // IoError maps ENOSPC
  EXPECT_EQ(s.sys_errno(), ENOSPC);
  EXPECT_EQ(s.message(), "write /dev/full at byte 0x200");
}

TEST(FdIo, ReadErrorOnWriteOnlyDescriptor) {
  UniqueFd fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  std::vector<uint8_t> buf(4);
  auto r = ReadUpTo(fd.get(), buf, "null", 7);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().sys_errno(), EBADF);
  EXPECT_EQ(r.status().message(), "read null at byte 0x7");
}

// A socket delivers a large write in short pieces; WriteAll and ReadExact
// must carry on until every byte moved.
TEST(FdIo, ShortTransfersOnASocketAreCompleted) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  int small = 4096;
  ::setsockopt(a.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  std::vector<uint8_t> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  std::thread writer([&] { EXPECT_TRUE(WriteAll(a.get(), data, "sock").ok()); });
  std::vector<uint8_t> got(data.size());
  EXPECT_TRUE(ReadExact(b.get(), got, "sock").ok());
  writer.join();
  EXPECT_EQ(got, data);
}

void NoOp(int) {}

// A signal that interrupts a blocking read (no SA_RESTART) must not end it.
TEST(FdIo, ReadRetriesAfterEintr) {
  struct sigaction sa{}, old{};
  sa.sa_handler = NoOp;
  ASSERT_EQ(::sigaction(SIGUSR1, &sa, &old), 0);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  UniqueFd rd(p[0]), wr(p[1]);
  pthread_t reader_thread = ::pthread_self();
  std::thread poker([&] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ::pthread_kill(reader_thread, SIGUSR1);
    }
    EXPECT_TRUE(WriteAll(wr.get(), Bytes("done"), "pipe").ok());
  });
  std::vector<uint8_t> buf(4);
  Status s = ReadExact(rd.get(), buf, "pipe");
  poker.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(std::string(buf.begin(), buf.end()), "done");
}

}  // namespace
}  // namespace flashpipe
