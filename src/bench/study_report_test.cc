#include "bench/study_report.h"

#include <gtest/gtest.h>

#include <regex>

namespace flashpipe::bench {
namespace {

std::vector<StudyResult> Results() {
  StudyResult small{{100, false, false}, 4'000'000'000, 1'000'000'000, 200'000, 0};
  StudyResult chunk{{0, true, false}, 1'250'000'000, 1'000'000'000, 40, 0};
  StudyResult engine{{0, false, true}, 1'000'000'000, 1'000'000'000, 1000, 0};
  return {small, chunk, engine};
}

StudyInfo Info() {
  StudyInfo info;
  info.target = "sim:size=8G,bw=45M,cmd_us=300";
  info.image = "super \"a\".simg";
  info.summary.image_size = 1536u << 20;
  info.summary.raw_bytes = 900'000'000;
  info.summary.fill_bytes = 100'000'000;
  info.area_offset = 2u << 30;
  info.area_size = 1536u << 20;
  info.logical_block = 512;
  info.queue_depth = 4;
  return info;
}

TEST(StudyReportTest, CsvHasOneRowPerVariantWithQuotedFields) {
  const std::string csv = FormatStudyCsv(Info(), Results());
  EXPECT_EQ(csv,
            "target,image,variant,buffer_blocks,chunk,pipelined,ns,data_bytes,requests,device_ns,MB_per_s,x_fastest\n"
            "\"sim:size=8G,bw=45M,cmd_us=300\",\"super \"\"a\"\".simg\",buffer 100 blocks,100,false,false,"
            "4000000000,1000000000,200000,0,250.000,4.000\n"
            "\"sim:size=8G,bw=45M,cmd_us=300\",\"super \"\"a\"\".simg\",buffer = chunk,0,true,false,"
            "1250000000,1000000000,40,0,800.000,1.250\n"
            "\"sim:size=8G,bw=45M,cmd_us=300\",\"super \"\"a\"\".simg\",pipelined,0,false,true,"
            "1000000000,1000000000,1000,0,1000.000,1.000\n");
}

TEST(StudyReportTest, JsonNamesTheRunAndEachVariant) {
  const std::string j = FormatStudyJson(Info(), Results());
  EXPECT_TRUE(j.starts_with("{\"schema\": \"flashpipe-bench-sparse\", \"schema_version\": 1, "
                            "\"target\": \"sim:size=8G,bw=45M,cmd_us=300\", \"image\": \"super \\\"a\\\".simg\", "
                            "\"image_size\": 1610612736, \"raw_bytes\": 900000000, \"fill_bytes\": 100000000"))
      << j;
  EXPECT_NE(j.find("\"area_offset\": 2147483648, \"area_size\": 1610612736, \"logical_block\": 512, "
                   "\"queue_depth\": 4, \"results\": ["),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("{\"variant\": \"buffer 100 blocks\", \"buffer_blocks\": 100, \"chunk\": false, \"pipelined\": "
                   "false, \"ns\": 4000000000, \"data_bytes\": 1000000000, \"requests\": 200000, \"device_ns\": 0, "
                   "\"MB_per_s\": 250.000, \"x_fastest\": 4.000}"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"variant\": \"pipelined\""), std::string::npos) << j;
  EXPECT_TRUE(j.ends_with("\n]}\n")) << j;
}

TEST(StudyReportTest, SvgHasOneLabelledBarPerVariantScaledToItsRate) {
  const std::string svg = RenderStudySvg(Results(), "study <loop>");
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_NE(svg.find("study &lt;loop&gt;"), std::string::npos);
  std::regex bar(R"re(<rect class="bar" x="[0-9.]+" y="[0-9.]+" width="([0-9.]+)")re");
  std::vector<double> widths;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it) {
    widths.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(widths.size(), 3u);
  EXPECT_NEAR(widths[0] / widths[2], 0.25, 0.01);  // 250 against 1000 MB/s
  EXPECT_NEAR(widths[1] / widths[2], 0.80, 0.01);
  for (const char* text : {">buffer 100 blocks<", ">buffer = chunk<", ">pipelined<",
                           ">250.0 MB/s, 4.000 s (4.00x)<", ">1000.0 MB/s, 1.000 s (fastest)<"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace flashpipe::bench
