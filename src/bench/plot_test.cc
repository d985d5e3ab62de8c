#include "bench/plot.h"

#include <gtest/gtest.h>

#include <regex>

namespace flashpipe::bench {
namespace {

std::vector<TransferResult> Sample() {
  std::vector<TransferResult> rs;
  for (Direction d : {Direction::kWrite, Direction::kRead}) {
    for (Mode m : {Mode::kBlocking, Mode::kNonBlocking, Mode::kQueued}) {
      for (uint64_t size = 4096; size <= (4 << 20); size *= 4) {
        TransferResult r;
        r.direction = d;
        r.mode = m;
        r.depth = ModeDepth(m, 4);
        r.request = size;
        r.count = 100;
        r.ns = 1'000'000'000 / (1 + int(m));  // all lines end close together
        rs.push_back(r);
      }
    }
  }
  return rs;
}

TEST(PlotTest, OneLabelledLinePerDirectionAndMode) {
  const std::string svg = RenderPlotSvg(Sample(), "loop <dio>");
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_NE(svg.find("loop &lt;dio&gt;"), std::string::npos);
  EXPECT_NE(svg.find("request size (bytes, log scale)"), std::string::npos);
  EXPECT_NE(svg.find("throughput (MiB/s)"), std::string::npos);
  size_t lines = 0, dashed = 0;
  for (size_t p = 0; (p = svg.find("<polyline", p)) != std::string::npos; ++p) {
    ++lines;
    if (svg.compare(svg.find("/>", p) - 22, 22, "stroke-dasharray=\"7 4\"") == 0) ++dashed;
  }
  EXPECT_EQ(lines, 6u);
  EXPECT_EQ(dashed, 3u);
  for (const char* l : {">write blocking<", ">read non-blocking<", ">write queued (4)<", ">read queued (4)<"}) {
    EXPECT_NE(svg.find(l), std::string::npos) << l;
  }
  EXPECT_NE(svg.find(">4K<"), std::string::npos);
  EXPECT_NE(svg.find(">4M<"), std::string::npos);
}

TEST(PlotTest, EndLabelsDoNotOverlap) {
  const std::string svg = RenderPlotSvg(Sample(), "t");
  // End labels are the only text drawn right of the plot (x > 680).
  std::regex re(R"re(<text x="(\d+\.\d)" y="(\d+\.\d)" fill=)re");
  std::vector<double> ys;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) {
    if (std::stod((*it)[1]) > 680) ys.push_back(std::stod((*it)[2]));
  }
  ASSERT_EQ(ys.size(), 6u);
  std::sort(ys.begin(), ys.end());
  for (size_t i = 1; i < ys.size(); ++i) EXPECT_GE(ys[i] - ys[i - 1], 14.9);
}

}  // namespace
}  // namespace flashpipe::bench
