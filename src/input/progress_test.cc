#include "input/progress.h"

#include <gtest/gtest.h>

#include <cstdio>

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

TEST(ProgressTest, PhaseResults) {
  EXPECT_EQ(FormatPhaseResult(Phase::kWriting, 512 << 20, 2.0), "512.0 MiB in 2.0 s, 256.0 MiB/s");
  EXPECT_EQ(FormatPhaseResult(Phase::kSyncing, 0, 0.42), "0.4 s");
  EXPECT_EQ(PhaseName(Phase::kVerifying), "verifying");
}

std::vector<std::string> Lines(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::vector<std::string> lines;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, f)) lines.emplace_back(buf);
  return lines;
}

TEST(ProgressTest, JsonEventsOnePerLineInPhaseOrder) {
  FILE* events = std::tmpfile();
  FILE* text = std::tmpfile();
  {
    Progress p(text, ProgressMode::kJson, "flashpipe write", events);
    p.Note("using block map \"x\".bmap");
    p.Begin(Phase::kWriting, 100);
    p.Update(40, 100);
    p.Begin(Phase::kSyncing);  // ends writing
    p.End();
    p.Begin(Phase::kVerifying, 50);
    p.Stop();  // interrupted
    EXPECT_TRUE(p.seconds(Phase::kWriting).has_value());
    EXPECT_TRUE(p.seconds(Phase::kVerifying).has_value());
    EXPECT_FALSE(p.seconds(Phase::kReading).has_value());
  }
  std::vector<std::string> l = Lines(events);
  ASSERT_EQ(l.size(), 7u);
  const char* want[] = {"\"event\": \"note\"",      "\"event\": \"phase_start\"", "\"event\": \"phase_end\"",
                        "\"event\": \"phase_start\"", "\"event\": \"phase_end\"",   "\"event\": \"phase_start\"",
                        "\"event\": \"phase_end\""};
  for (size_t i = 0; i < l.size(); ++i) {
    EXPECT_EQ(l[i].rfind("{\"schema\": \"flashpipe-progress\", \"schema_version\": 1, \"command\": \"write\", ", 0), 0u) << l[i];
    EXPECT_NE(l[i].find(want[i]), std::string::npos) << i << ": " << l[i];
    EXPECT_EQ(l[i].back(), '\n');
  }
  EXPECT_NE(l[0].find("\"message\": \"using block map \\\"x\\\".bmap\""), std::string::npos) << l[0];
  EXPECT_NE(l[1].find("\"phase\": \"writing\", \"total\": 100"), std::string::npos) << l[1];
  EXPECT_NE(l[2].find("\"phase\": \"writing\", \"completed\": true, \"bytes\": 40"), std::string::npos) << l[2];
  EXPECT_NE(l[3].find("\"phase\": \"syncing\", \"total\": null"), std::string::npos) << l[3];
  EXPECT_NE(l[6].find("\"phase\": \"verifying\", \"completed\": false"), std::string::npos) << l[6];
  // Notes reach the human text too, nothing else does.
  std::vector<std::string> t = Lines(text);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], "flashpipe write: using block map \"x\".bmap\n");
  std::fclose(events);
  std::fclose(text);
}

TEST(ProgressTest, PlainLinesPerPhase) {
  FILE* text = std::tmpfile();
  {
    Progress p(text, ProgressMode::kLines, "flashpipe read");
    p.Begin(Phase::kReading, 4 << 20);
    p.Update(4 << 20, 4 << 20);  // a 10 % step: printed
    p.Begin(Phase::kSyncing);
    p.End();
  }
  std::vector<std::string> t = Lines(text);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0], "flashpipe read: reading 4.0 MiB\n");
  EXPECT_EQ(t[1].rfind("flashpipe read: reading 4.0 MiB of 4.0 MiB (100%)", 0), 0u) << t[1];
  EXPECT_EQ(t[2].rfind("flashpipe read: reading done: 4.0 MiB in ", 0), 0u) << t[2];
  EXPECT_EQ(t[3], "flashpipe read: syncing\n");
  EXPECT_EQ(t[4].rfind("flashpipe read: syncing done: ", 0), 0u) << t[4];
  std::fclose(text);
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
  EXPECT_EQ(j.rfind("{\"schema\": \"flashpipe-write\", \"schema_version\": 1, \"ok\": true, \"interrupted\": false", 0), 0u) << j;
  EXPECT_NE(j.find("\"image_size\": 4194304, \"image_sha256\": null"), std::string::npos) << j;
  EXPECT_NE(j.find("\"phases\": {\"write\": null, \"sync\": null, \"verify\": null, \"digest\": null}, "
                   "\"digest_mib_per_s\": null"),
            std::string::npos)
      << j;
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
