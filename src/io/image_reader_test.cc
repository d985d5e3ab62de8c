// ImageReader on regular files with every backend: bytes in order whatever
// the completion order, holes skipped, depth kept full, ranges inside the
// window, read errors and a file that shrinks while it is read.
#include "io/image_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "testing/fault_queue.h"
#include "testing/image_events.h"
#include "testing/reorder_queue.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

struct Collected {
  std::vector<uint8_t> bytes;
  uint64_t hole_bytes = 0;
  Status status;
};

// Reads everything; holes become zeros in `bytes`.
Collected ReadAll(ImageReader& r, uint64_t begin) {
  Collected c;
  uint64_t expect = begin;
  for (;;) {
    auto p = r.Next();
    if (!p.ok()) {
      c.status = p.status();
      return c;
    }
    if (p->length == 0) return c;
    EXPECT_EQ(p->offset, expect) << "pieces out of order";
    expect += p->length;
    if (p->hole) {
      c.hole_bytes += p->length;
      c.bytes.insert(c.bytes.end(), p->length, 0);
    } else {
      EXPECT_EQ(p->data.size(), p->length);
      c.bytes.insert(c.bytes.end(), p->data.begin(), p->data.end());
    }
  }
}

class ReaderTest : public ::testing::TestWithParam<Backend> {
 protected:
  // A file of `size` random bytes with holes punched where `holes` says.
  void MakeFile(uint64_t size, const std::vector<std::pair<uint64_t, uint64_t>>& holes) {
    std::mt19937_64 rng(5);
    content_ = testing::RandomBytes(rng, size);
    for (auto [off, len] : holes) std::fill_n(content_.begin() + off, len, 0);
    path_ = dir_.File("src.img");
    testing::WriteFile(path_, content_);
    int fd = open(path_.c_str(), O_RDWR);
    for (auto [off, len] : holes)
      ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len), 0);
    close(fd);
    auto t = Target::Open(path_, {.read_only = true});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    target_ = std::move(*t);
    auto q = target_->MakeQueue(GetParam(), 4);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    queue_ = std::move(*q);
  }
  testing::TempDir dir_;
  std::string path_;
  std::vector<uint8_t> content_;
  std::unique_ptr<Target> target_;
  std::unique_ptr<IoQueue> queue_;
};

TEST_P(ReaderTest, ReadsEveryByteInOrderAndSkipsHoles) {
  const uint64_t mib = 1 << 20;
  MakeFile(9 * mib + 1234, {{2 * mib, 3 * mib}, {7 * mib + 4096, 8192}});
  auto r = ImageReader::Create(*target_, queue_.get(), 0, content_.size(), {.request_size = mib});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Collected c = ReadAll(**r, 0);
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  EXPECT_EQ(c.bytes, content_);
  EXPECT_GE(c.hole_bytes, 3 * mib + 8192) << "holes were read";
  EXPECT_EQ((*r)->bytes_read() + (*r)->hole_bytes(), content_.size());
}

TEST_P(ReaderTest, ReadsAnInnerRangeWithAnUnalignedEnd) {
  MakeFile(4 << 20, {});
  auto r = ImageReader::Create(*target_, queue_.get(), 8192, 1000000, {.request_size = 256 << 10});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Collected c = ReadAll(**r, 8192);
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  EXPECT_EQ(c.bytes, std::vector<uint8_t>(content_.begin() + 8192, content_.begin() + 8192 + 1000000));
}

TEST_P(ReaderTest, WithoutHoleSkippingHolesAreReadAsZeros) {
  MakeFile(3 << 20, {{1 << 20, 1 << 20}});
  auto r = ImageReader::Create(*target_, queue_.get(), 0, content_.size(), {.skip_holes = false});
  ASSERT_TRUE(r.ok());
  Collected c = ReadAll(**r, 0);
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  EXPECT_EQ(c.bytes, content_);
  EXPECT_EQ(c.hole_bytes, 0u);
}

TEST_P(ReaderTest, AFileThatShrinksWhileReadIsAnError) {
  MakeFile(8 << 20, {});
  auto r = ImageReader::Create(*target_, queue_.get(), 0, content_.size(), {.request_size = 1 << 20});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Next().ok());
  ASSERT_EQ(truncate(path_.c_str(), 2 << 20), 0);
  Collected c = ReadAll(**r, 1 << 20);
  ASSERT_FALSE(c.status.ok());
  EXPECT_NE(c.status.message().find("shrank while it was read"), std::string::npos) << c.status.ToString();
}

INSTANTIATE_TEST_SUITE_P(Backends, ReaderTest, ::testing::Values(Backend::kUring, Backend::kThreads, Backend::kSync),
                         [](const auto& info) {
                           return std::string(info.param == Backend::kUring     ? "uring"
                                              : info.param == Backend::kThreads ? "threads"
                                                                                : "sync");
                         });

class ReaderQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(9);
    content_ = testing::RandomBytes(rng, 16 << 20);
    path_ = dir_.File("src.img");
    testing::WriteFile(path_, content_);
    auto t = Target::Open(path_, {.read_only = true});
    ASSERT_TRUE(t.ok());
    target_ = std::move(*t);
  }
  testing::TempDir dir_;
  std::string path_;
  std::vector<uint8_t> content_;
  std::unique_ptr<Target> target_;
};

TEST_F(ReaderQueueTest, PiecesComeInOrderWhateverTheCompletionOrder) {
  testing::ReorderQueue q(target_->fd(), 6, 77);
  auto r = ImageReader::Create(*target_, &q, 0, content_.size(), {.request_size = 256 << 10});
  ASSERT_TRUE(r.ok());
  Collected c = ReadAll(**r, 0);
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  EXPECT_EQ(c.bytes, content_);
}

TEST_F(ReaderQueueTest, KeepsTheQueueFullWhileTheCallerWorks) {
  auto inner = target_->MakeQueue(Backend::kThreads, 4);
  ASSERT_TRUE(inner.ok());
  testing::FaultQueue q(inner->get());
  unsigned max_in_flight = 0, submitted = 0;
  q.OnSubmit([&](const IoOp&) {
    max_in_flight = std::max(max_in_flight, q.in_flight() + 1);
    ++submitted;
  });
  auto r = ImageReader::Create(*target_, &q, 0, content_.size(), {.request_size = 1 << 20});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Next().ok());
  // The first piece and the three after it were requested before the caller
  // got the first one; handing it back requests the next.
  EXPECT_EQ(submitted, 4u) << "the queue ran empty behind the caller";
  ASSERT_TRUE((*r)->Next().ok());
  EXPECT_GE(submitted, 5u);
  Collected c = ReadAll(**r, 2 << 20);
  ASSERT_TRUE(c.status.ok());
  EXPECT_EQ(max_in_flight, 4u);
}

TEST_F(ReaderQueueTest, AReadErrorStopsTheReaderAndNamesTheFile) {
  auto inner = target_->MakeQueue(Backend::kSync, 4);
  ASSERT_TRUE(inner.ok());
  testing::FaultQueue q(inner->get());
  q.FailReads(5 << 20, EIO);  // a read that ends beyond 5 MiB fails
  auto r = ImageReader::Create(*target_, &q, 0, content_.size(), {.request_size = 1 << 20});
  ASSERT_TRUE(r.ok());
  Collected c = ReadAll(**r, 0);
  ASSERT_FALSE(c.status.ok());
  EXPECT_EQ(c.bytes.size(), 5u << 20) << "bytes before the bad request are handed out, none after";
  EXPECT_EQ(c.status.sys_errno(), EIO);
  EXPECT_NE(c.status.ToString().find(path_), std::string::npos) << c.status.ToString();
  auto again = (*r)->Next();
  EXPECT_FALSE(again.ok()) << "a failed reader stays failed";
}

TEST_F(ReaderQueueTest, ARangeOutsideTheWindowIsRefused) {
  auto q = target_->MakeQueue(Backend::kSync, 2);
  ASSERT_TRUE(q.ok());
  auto r = ImageReader::Create(*target_, q->get(), 4096, content_.size(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNoSpace);
}

TEST_F(ReaderQueueTest, AnUnalignedDirectStartIsRefused) {
  if (!target_->geometry().direct) GTEST_SKIP() << "no O_DIRECT on this filesystem";
  auto q = target_->MakeQueue(Backend::kSync, 2);
  ASSERT_TRUE(q.ok());
  auto r = ImageReader::Create(*target_, q->get(), 100, 4096, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("logical block"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace flashpipe::io
