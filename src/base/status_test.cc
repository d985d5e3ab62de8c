#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace flashpipe {
namespace {

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Code::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, CarriesCodeMessageAndErrno) {
  Status s = IoError("write /dev/sdx at byte 0x1000", EIO);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_EQ(s.sys_errno(), EIO);
  EXPECT_EQ(s.message(), "write /dev/sdx at byte 0x1000");
  EXPECT_EQ(s.ToString(), "write /dev/sdx at byte 0x1000: Input/output error");
}

TEST(StatusTest, EnospcBecomesNoSpace) { EXPECT_EQ(IoError("write", ENOSPC).code(), Code::kNoSpace); }

TEST(StatusTest, ErrnoErrorReadsErrno) {
  errno = ENOENT;
  Status s = ErrnoError("open x");
  EXPECT_EQ(s.sys_errno(), ENOENT);
}

TEST(StatusTest, OkCodeMakesOk) { EXPECT_TRUE(Status(Code::kOk, "ignored").ok()); }

TEST(StatusTest, WithContextPrefixes) {
  Status s = Corrupt("chunk 1 at input byte 0x28: bad").WithContext("a.simg");
  EXPECT_EQ(s.code(), Code::kCorrupt);
  EXPECT_EQ(s.message(), "a.simg: chunk 1 at input byte 0x28: bad");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, CodeNames) {
  EXPECT_EQ(CodeName(Code::kCorrupt), "corrupt");
  EXPECT_EQ(CodeName(Code::kInternal), "internal");
  EXPECT_EQ(CodeName(Code::kMismatch), "mismatch");
  EXPECT_EQ(CodeName(static_cast<Code>(200)), "unknown");
}

Result<int> Half(int x) {
  if (x % 2) return InvalidArgument(fmt::format("{} is odd", x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  FP_ASSIGN_OR_RETURN(int h, Half(x));
  FP_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::Ok();
}

TEST(ResultTest, ValueOrStatus) {
  Result<int> r = Half(8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4);
  EXPECT_TRUE(r.status().ok());
  Result<int> e = Half(3);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "3 is odd");
}

TEST(ResultTest, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  EXPECT_EQ(Quarter(6, &out).message(), "3 is odd");
}

Status FailIfNegative(int x) { return x < 0 ? InvalidArgument("negative") : Status::Ok(); }
Status Both(int a, int b) {
  FP_RETURN_IF_ERROR(FailIfNegative(a));
  FP_RETURN_IF_ERROR(FailIfNegative(b));
  return Status::Ok();
}

TEST(ResultTest, ReturnIfError) {
  EXPECT_TRUE(Both(1, 2).ok());
  EXPECT_EQ(Both(1, -2).message(), "negative");
}

}  // namespace
}  // namespace flashpipe
