#include "bench/report.h"

#include <gtest/gtest.h>

#include <regex>

namespace flashpipe::bench {
namespace {

TransferResult Result(Direction d, Mode m, uint64_t request, uint64_t count, uint64_t ns) {
  TransferResult r;
  r.direction = d;
  r.mode = m;
  r.depth = ModeDepth(m, 4);
  r.request = request;
  r.count = count;
  r.ns = ns;
  return r;
}

TEST(ReportTest, TransferLineIsMmcTestFormat) {
  // 32768 x 4 KiB = 128 MiB in 1.5 s.
  auto r = Result(Direction::kWrite, Mode::kBlocking, 4096, 32768, 1'500'000'000);
  EXPECT_EQ(FormatTransferLine(r),
            "Transfer of 32768 x 8 sectors (32768 x 4 KiB) took 1.500000000 seconds "
            "(89478 kB/s, 87381 KiB/s, 21845.33 IOPS)");
  auto half = Result(Direction::kRead, Mode::kQueued, 512, 3, 7);
  EXPECT_EQ(FormatTransferLine(half),
            "Transfer of 3 x 1 sectors (3 x 0.5 KiB) took 0.000000007 seconds "
            "(219428571 kB/s, 214285714 KiB/s, 428571428.57 IOPS)");
}

TEST(ReportTest, RatesAre64Bit) {
  // 64 GiB in one second: a 32-bit kB/s would wrap.
  auto r = Result(Direction::kRead, Mode::kQueued, 4 << 20, 16384, 1'000'000'000);
  Rates x = RatesOf(r);
  EXPECT_EQ(x.kb_per_s, 68'719'476u);
  EXPECT_EQ(x.kib_per_s, 67'108'864u);
  EXPECT_EQ(x.iops_x100, 1'638'400u);
}

// What a script reading our output would do: parse every field back.
TEST(ReportTest, TransferLineParsesBack) {
  const std::regex re(
      R"(^Transfer of (\d+) x (\d+) sectors \((\d+) x (\d+(?:\.5)?) KiB\) took (\d+)\.(\d{9}) seconds )"
      R"(\((\d+) kB/s, (\d+) KiB/s, (\d+)\.(\d{2}) IOPS\)$)");
  for (uint64_t size : {uint64_t{512}, uint64_t{4096}, uint64_t{1} << 20, uint64_t{4} << 20}) {
    auto r = Result(Direction::kWrite, Mode::kNonBlocking, size, 1234, 987'654'321'012);
    std::smatch m;
    const std::string line = FormatTransferLine(r);
    ASSERT_TRUE(std::regex_match(line, m, re)) << line;
    EXPECT_EQ(std::stoull(m[1]), 1234u);
    EXPECT_EQ(std::stoull(m[2]), size / 512);
    EXPECT_EQ(m[1], m[3]);
    EXPECT_DOUBLE_EQ(std::stod(m[4]), size / 1024.0);
    const uint64_t ns = std::stoull(m[5]) * 1'000'000'000 + std::stoull(m[6]);
    EXPECT_EQ(ns, r.ns);
    const double bytes = double(size) * 1234;
    EXPECT_NEAR(std::stod(m[7]), bytes / (ns / 1e9) / 1000, 1.0);
    EXPECT_NEAR(std::stod(m[8]), bytes / (ns / 1e9) / 1024, 1.0);
    EXPECT_NEAR(std::stod(m[9]) + std::stod(m[10]) / 100, 1234 / (ns / 1e9), 0.01);
  }
}

TEST(ReportTest, SummaryShowsGainOverBlocking) {
  std::vector<TransferResult> rs = {
      Result(Direction::kWrite, Mode::kBlocking, 4096, 100, 2'000'000),
      Result(Direction::kWrite, Mode::kNonBlocking, 4096, 100, 1'000'000),
      Result(Direction::kWrite, Mode::kQueued, 4096, 100, 1'600'000),
      Result(Direction::kRead, Mode::kBlocking, 1 << 20, 10, 10'000'000),
  };
  const std::string s = FormatSummary(rs);
  EXPECT_NE(s.find("Write throughput, MiB/s (gain over blocking):"), std::string::npos) << s;
  EXPECT_NE(s.find("queued (4)"), std::string::npos) << s;
  EXPECT_NE(s.find("390.6 (+100.0%)"), std::string::npos) << s;
  EXPECT_NE(s.find("244.1 (+25.0%)"), std::string::npos) << s;
  EXPECT_NE(s.find("Read throughput"), std::string::npos) << s;
  EXPECT_NE(s.find("1.0 MiB"), std::string::npos) << s;
}

TEST(ReportTest, CsvAndJson) {
  RunInfo info{"/dev/loop0", "io_uring", "copy", 1 << 20, 8 << 20, false};
  std::vector<TransferResult> rs = {Result(Direction::kWrite, Mode::kBlocking, 4096, 2048, 100'000'000)};
  EXPECT_EQ(FormatCsv(info, rs),
            "target,backend,prep,direction,mode,depth,request_bytes,count,bytes,ns,kB_per_s,KiB_per_s,iops,MiB_per_s\n"
            "/dev/loop0,io_uring,copy,write,blocking,1,4096,2048,8388608,100000000,83886,81920,20480.00,80.000\n");
  const std::string j = FormatJson(info, rs);
  EXPECT_NE(j.find("\"target\": \"/dev/loop0\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"mode\": \"blocking\", \"depth\": 1, \"request_bytes\": 4096"), std::string::npos) << j;
  EXPECT_EQ(JsonString("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
}

// A sim: target holds commas: unquoted, it shifted every later column.
TEST(ReportTest, CsvQuotesFieldsWithCommasAndQuotes) {
  RunInfo info{"sim:size=8G,bw=45M,cmd_us=300", "sync", "spin:200", 0, 8 << 20, false};
  std::vector<TransferResult> rs = {Result(Direction::kWrite, Mode::kBlocking, 4096, 2048, 100'000'000)};
  const std::string csv = FormatCsv(info, rs);
  EXPECT_NE(csv.find("\n\"sim:size=8G,bw=45M,cmd_us=300\",sync,spin:200,write,blocking,1,4096,"), std::string::npos)
      << csv;
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField(""), "");
}

}  // namespace
}  // namespace flashpipe::bench
