#include "bench/plot.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "bench/report.h"

namespace flashpipe::bench {
namespace {

constexpr double kWidth = 860, kHeight = 520;
constexpr double kLeft = 80, kRight = 190, kTop = 56, kBottom = 64;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr double kLabelGap = 15;  // px between two end labels

struct Series {
  Direction direction;
  Mode mode;
  unsigned depth;
  std::vector<std::pair<uint64_t, double>> points;  // size, MiB/s
};

struct Label {
  double y_line;  // where the line ends
  double y;       // where the text goes
  std::string text;
  std::string color;
};

const char* ModeColor(Mode m) {
  switch (m) {
    case Mode::kBlocking: return "#c0392b";
    case Mode::kNonBlocking: return "#2471a3";
    case Mode::kQueued: return "#1e8449";
  }
  return "#000";
}

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string SizeLabel(uint64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{}K", b >> 10);
  return fmt::format("{}", b);
}

// A round step so that max/step is 4..8 lines.
double NiceStep(double max) {
  const double raw = max / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (f * mag >= raw) return f * mag;
  }
  return 10 * mag;
}

std::vector<Series> Group(const std::vector<TransferResult>& results) {
  std::vector<Series> out;
  for (const auto& r : results) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Series& s) {
      return s.direction == r.direction && s.mode == r.mode && s.depth == r.depth;
    });
    if (it == out.end()) it = out.insert(out.end(), Series{r.direction, r.mode, r.depth, {}});
    it->points.emplace_back(r.request, RatesOf(r).mib_per_s);
  }
  for (auto& s : out) std::sort(s.points.begin(), s.points.end());
  return out;
}

// Spreads labels so that neighbours are at least kLabelGap apart, keeping
// each as close to its line's end as it can.
void Spread(std::vector<Label>& labels) {
  std::stable_sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.y < b.y; });
  for (size_t i = 1; i < labels.size(); ++i) {
    labels[i].y = std::max(labels[i].y, labels[i - 1].y + kLabelGap);
  }
  const double bottom = kTop + kPlotH + 20;
  if (!labels.empty() && labels.back().y > bottom) {
    labels.back().y = bottom;
    for (size_t i = labels.size() - 1; i > 0; --i) {
      labels[i - 1].y = std::min(labels[i - 1].y, labels[i].y - kLabelGap);
    }
  }
}

struct Scale {
  double lx0 = 0, lx1 = 1, step = 1, y_max = 1;
  double X(uint64_t size) const { return kLeft + (std::log2(double(size)) - lx0) / (lx1 - lx0) * kPlotW; }
  double Y(double rate) const { return kTop + kPlotH - rate / y_max * kPlotH; }
};

Scale MakeScale(const std::vector<uint64_t>& sizes, const std::vector<Series>& series) {
  double max_rate = 0;
  for (const auto& s : series) {
    for (auto [size, rate] : s.points) max_rate = std::max(max_rate, rate);
  }
  if (max_rate <= 0) max_rate = 1;
  Scale sc;
  const uint64_t lo = sizes.empty() ? 4096 : sizes.front();
  const uint64_t hi = sizes.empty() || sizes.back() == lo ? lo * 2 : sizes.back();
  sc.lx0 = std::log2(double(lo));
  sc.lx1 = std::log2(double(hi));
  sc.step = NiceStep(max_rate);
  sc.y_max = std::ceil(max_rate / sc.step) * sc.step;
  return sc;
}

// Title, grid, tick labels, frame and axis titles.
std::string Frame(const Scale& sc, const std::vector<uint64_t>& sizes, std::string_view title) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{3}</text>\n"
      "<text x=\"{2}\" y=\"43\" fill=\"#555\">colour = mode; solid line = write, dashed = read</text>\n",
      kWidth, kHeight, kLeft, Escape(title));
  for (double v = 0; v <= sc.y_max + sc.step / 2; v += sc.step) {
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n",
                       kLeft, sc.Y(v), kLeft + kPlotW, sc.Y(v), kLeft - 8, sc.Y(v) + 4, v);
  }
  for (uint64_t size : sizes) {
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#eee\"/>\n"
                       "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                       sc.X(size), kTop, kTop + kPlotH, kTop + kPlotH + 18, SizeLabel(size));
  }
  return svg + fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">request size (bytes, log scale)</text>\n"
      "<text transform=\"translate(22 {:.1f}) rotate(-90)\" text-anchor=\"middle\">throughput (MiB/s)</text>\n",
      kLeft, kTop, kPlotW, kPlotH, kLeft + kPlotW / 2, kHeight - 18, kTop + kPlotH / 2);
}

// One polyline with markers; its end label is added to `labels`.
std::string Line(const Series& s, const Scale& sc, std::vector<Label>& labels) {
  const char* color = ModeColor(s.mode);
  const char* dash = s.direction == Direction::kRead ? " stroke-dasharray=\"7 4\"" : "";
  std::string pts, dots;
  for (auto [size, rate] : s.points) {
    pts += fmt::format("{:.1f},{:.1f} ", sc.X(size), sc.Y(rate));
    dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", sc.X(size), sc.Y(rate), color);
  }
  const std::string mode = s.mode == Mode::kQueued ? fmt::format("queued ({})", s.depth) : ModeName(s.mode);
  const double y_end = sc.Y(s.points.back().second);
  labels.push_back({y_end, y_end, fmt::format("{} {}", DirectionName(s.direction), mode), color});
  return fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.2\"{}/>\n", pts,
                     color, dash) + dots;
}

std::string EndLabels(std::vector<Label> labels) {
  Spread(labels);
  const double x_end = kLeft + kPlotW;
  std::string svg;
  for (const auto& l : labels) {
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>\n"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n",
                       x_end + 2, l.y_line, x_end + 12, l.y, l.color, x_end + 15, l.y + 4, l.color,
                       Escape(l.text));
  }
  return svg;
}

}  // namespace

std::string RenderPlotSvg(const std::vector<TransferResult>& results, std::string_view title) {
  const std::vector<Series> series = Group(results);
  std::vector<uint64_t> sizes;
  for (const auto& r : results) sizes.push_back(r.request);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const Scale sc = MakeScale(sizes, series);
  std::string svg = Frame(sc, sizes, title);
  std::vector<Label> labels;
  for (const auto& s : series) svg += Line(s, sc, labels);
  return svg + EndLabels(std::move(labels)) + "</svg>\n";
}

namespace {

constexpr double kBarLabelW = 170, kBarTextW = 230, kBarH = 26, kBarGap = 12, kBarTop = 64, kBarBottom = 52;

std::string BarAxis(double x0, double plot_w, double y_bottom, double step, double max, std::string_view axis_title) {
  std::string svg;
  for (double v = 0; v <= max + step / 2; v += step) {
    const double x = x0 + v / max * plot_w;
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n"
                       "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>\n",
                       x, kBarTop - 6, y_bottom, y_bottom + 16, v);
  }
  return svg + fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x0 + plot_w / 2,
                           y_bottom + 36, Escape(axis_title));
}

}  // namespace

std::string RenderBarsSvg(const std::vector<Bar>& bars, std::string_view title, std::string_view axis_title) {
  const double height = kBarTop + double(bars.size()) * (kBarH + kBarGap) + kBarBottom;
  const double x0 = kBarLabelW, plot_w = kWidth - kBarLabelW - kBarTextW;
  double max_value = 0;
  for (const auto& b : bars) max_value = std::max(max_value, b.value);
  if (max_value <= 0) max_value = 1;
  const double step = NiceStep(max_value), max = std::ceil(max_value / step) * step;
  const double y_bottom = kBarTop + double(bars.size()) * (kBarH + kBarGap);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{2}</text>\n",
      kWidth, height, Escape(title));
  svg += BarAxis(x0, plot_w, y_bottom, step, max, axis_title);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = kBarTop + double(i) * (kBarH + kBarGap);
    const double w = std::max(0.0, b.value) / max * plot_w;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n"
                       "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>\n"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                       x0 - 8, y + kBarH / 2 + 4, Escape(b.label), x0, y, w, kBarH,
                       b.highlight ? ModeColor(Mode::kQueued) : ModeColor(Mode::kBlocking), x0 + w + 6,
                       y + kBarH / 2 + 4, Escape(b.text));
  }
  return svg + "</svg>\n";
}

}  // namespace flashpipe::bench
