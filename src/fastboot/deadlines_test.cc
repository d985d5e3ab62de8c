#include "fastboot/deadlines.h"

#include <gtest/gtest.h>

namespace flashpipe::fastboot {
namespace {

using std::chrono::milliseconds;
constexpr uint64_t kKiB = 1024;

TEST(RateFloor, FirstWindowIsGraceThenEachWindowIsJudged) {
  RateFloor::Clock::time_point t0{};
  RateFloor floor({.min_download_rate = 64 * kKiB, .rate_window = milliseconds(1000)}, t0);
  EXPECT_EQ(floor.next_check(), t0 + milliseconds(1000));
  EXPECT_TRUE(floor.Check(0, t0 + milliseconds(500)).ok());   // before the check point: nothing
  EXPECT_TRUE(floor.Check(10, t0 + milliseconds(1000)).ok()); // grace: not judged
  EXPECT_EQ(floor.next_check(), t0 + milliseconds(2000));
  EXPECT_TRUE(floor.Check(10 + 64 * kKiB, t0 + milliseconds(2000)).ok());  // exactly the floor
  Status slow = floor.Check(10 + 64 * kKiB + 64 * kKiB - 1, t0 + milliseconds(3000));
  EXPECT_EQ(slow.code(), Code::kTimedOut);
  EXPECT_NE(slow.message().find("download too slow"), std::string::npos) << slow.ToString();
}

TEST(RateFloor, ZeroRateIsNeverJudged) {
  RateFloor floor({.min_download_rate = 0}, RateFloor::Clock::now());
  EXPECT_EQ(floor.next_check(), RateFloor::Clock::time_point::max());
  EXPECT_TRUE(floor.Check(0, RateFloor::Clock::now() + std::chrono::hours(1)).ok());
}

}  // namespace
}  // namespace flashpipe::fastboot
