#include "input/progress.h"

#include <gtest/gtest.h>

#include "input/write_job.h"

namespace flashpipe::input {
namespace {

TEST(ProgressTest, BarWithKnownTotal) {
  EXPECT_EQ(FormatProgress(512 << 20, 1024 << 20, 2.0, true),
            "[##########----------]  50%  512.0 MiB / 1.0 GiB  256.0 MiB/s  ETA 0:02");
}

TEST(ProgressTest, LineWithKnownTotal) {
  EXPECT_EQ(FormatProgress(3 << 20, 4 << 20, 3.0, false), "3.0 MiB of 4.0 MiB (75%)  1.0 MiB/s  ETA 0:01");
}

TEST(ProgressTest, UnknownTotalHasNoPercentOrEta) {
  EXPECT_EQ(FormatProgress(10 << 20, 0, 5.0, true), "10.0 MiB  2.0 MiB/s  0:05");
}

TEST(ProgressTest, DoneAndZeroTime) {
  EXPECT_EQ(FormatProgress(100, 100, 0.0, false), "100 B of 100 B (100%)  0.0 MiB/s  ETA -:--");
}

TEST(ReportJsonTest, FieldsAndEscaping) {
  WriteReport r;
  r.image = "a\"b\\c.simg";
  r.kind = "sparse";
  r.targets = {"/dev/loop0", "x.img"};
  r.backend = "io_uring";
  r.image_size = 4 << 20;
  r.stats.bytes_written = 1 << 20;
  r.stats.bytes_zeroed = 3 << 20;
  r.seconds = 2.0;
  r.verify = VerifyOutcome::kPassed;
  std::string j = ReportJson(r);
  EXPECT_NE(j.find("\"ok\": true"), std::string::npos) << j;
  EXPECT_NE(j.find("\"image\": \"a\\\"b\\\\c.simg\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"targets\": [\"/dev/loop0\", \"x.img\"]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"bytes_zeroed\": 3145728"), std::string::npos) << j;
  EXPECT_NE(j.find("\"mib_per_s\": 2.0"), std::string::npos) << j;
  EXPECT_NE(j.find("\"verify\": \"passed\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"error\": null"), std::string::npos) << j;
  r.status = NoSpace("x.img: full\n");
  j = ReportJson(r);
  EXPECT_NE(j.find("\"ok\": false"), std::string::npos) << j;
  EXPECT_NE(j.find("\"error\": \"x.img: full\\u000a\""), std::string::npos) << j;
}

}  // namespace
}  // namespace flashpipe::input
