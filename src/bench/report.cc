#include "bench/report.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "base/units.h"

namespace flashpipe::bench {
namespace {

using u128 = unsigned __int128;

std::string KiBText(uint64_t bytes) {
  return bytes % 1024 == 512 ? fmt::format("{}.5", bytes / 1024) : fmt::format("{}", bytes / 1024);
}

std::string Capitalized(const char* s) {
  std::string t(s);
  if (!t.empty()) t[0] = static_cast<char>(t[0] - 'a' + 'A');
  return t;
}

std::string ModeColumn(Mode m, unsigned depth) {
  return m == Mode::kQueued ? fmt::format("queued ({})", depth) : ModeName(m);
}

const TransferResult* Find(const std::vector<TransferResult>& rs, Direction d, Mode m, uint64_t size) {
  for (const auto& r : rs) {
    if (r.direction == d && r.mode == m && r.request == size) return &r;
  }
  return nullptr;
}

std::string SummaryFor(const std::vector<TransferResult>& rs, Direction d) {
  std::vector<uint64_t> sizes;
  std::vector<std::pair<Mode, unsigned>> modes;
  for (const auto& r : rs) {
    if (r.direction != d) continue;
    if (std::find(sizes.begin(), sizes.end(), r.request) == sizes.end()) sizes.push_back(r.request);
    auto key = std::make_pair(r.mode, r.depth);
    if (std::find(modes.begin(), modes.end(), key) == modes.end()) modes.push_back(key);
  }
  if (sizes.empty()) return "";
  std::sort(sizes.begin(), sizes.end());
  std::string out = fmt::format("{} throughput, MiB/s (gain over blocking):\n{:>9}",
                                Capitalized(DirectionName(d)), "size");
  for (auto [m, depth] : modes) out += fmt::format("  {:>20}", ModeColumn(m, depth));
  out += "\n";
  for (uint64_t size : sizes) {
    out += fmt::format("{:>9}", FormatBytes(size));
    const TransferResult* base = Find(rs, d, Mode::kBlocking, size);
    for (auto [m, depth] : modes) {
      const TransferResult* r = Find(rs, d, m, size);
      std::string cell = r ? fmt::format("{:.1f}", RatesOf(*r).mib_per_s) : "-";
      if (r && base && m != Mode::kBlocking && base->ns > 0) {
        double gain = (double(base->ns) / double(std::max<uint64_t>(r->ns, 1)) - 1.0) * 100.0;
        cell += fmt::format(" ({:+.1f}%)", gain);
      }
      out += fmt::format("  {:>20}", cell);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

Rates RatesOf(const TransferResult& r) {
  const uint64_t ns = std::max<uint64_t>(r.ns, 1);
  const u128 bytes = r.bytes();
  Rates x;
  x.kb_per_s = static_cast<uint64_t>(bytes * 1'000'000 / ns);
  x.kib_per_s = static_cast<uint64_t>(bytes * 1'000'000'000 / (u128{ns} * 1024));
  x.iops_x100 = static_cast<uint64_t>(u128{r.count} * 100'000'000'000ull / ns);
  x.mib_per_s = double(r.bytes()) * 1e9 / double(ns) / 1048576.0;
  return x;
}

std::string FormatTransferLine(const TransferResult& r) {
  const Rates x = RatesOf(r);
  return fmt::format("Transfer of {} x {} sectors ({} x {} KiB) took {}.{:09} seconds "
                     "({} kB/s, {} KiB/s, {}.{:02} IOPS)",
                     r.count, r.request / 512, r.count, KiBText(r.request), r.ns / 1'000'000'000,
                     r.ns % 1'000'000'000, x.kb_per_s, x.kib_per_s, x.iops_x100 / 100,
                     x.iops_x100 % 100);
}

std::string FormatTestHeader(Direction d, Mode m, unsigned depth, const Prep& prep) {
  return fmt::format("{}, {} (depth {}), prep {}:", Capitalized(DirectionName(d)), ModeName(m), depth,
                     PrepName(prep));
}

std::string FormatSummary(const std::vector<TransferResult>& results) {
  std::string out;
  for (Direction d : {Direction::kWrite, Direction::kRead}) {
    std::string part = SummaryFor(results, d);
    if (part.empty()) continue;
    if (!out.empty()) out += "\n";
    out += part;
  }
  return out;
}

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string FormatCsv(const RunInfo& info, const std::vector<TransferResult>& results) {
  std::string out =
      "target,backend,prep,direction,mode,depth,request_bytes,count,bytes,ns,kB_per_s,KiB_per_s,iops,MiB_per_s\n";
  for (const auto& r : results) {
    const Rates x = RatesOf(r);
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}.{:02},{:.3f}\n", CsvField(info.target),
                       CsvField(info.backend), CsvField(info.prep), CsvField(DirectionName(r.direction)),
                       CsvField(ModeName(r.mode)), r.depth, r.request,
                       r.count, r.bytes(), r.ns, x.kb_per_s, x.kib_per_s, x.iops_x100 / 100,
                       x.iops_x100 % 100, x.mib_per_s);
  }
  return out;
}

std::string FormatJson(const RunInfo& info, const std::vector<TransferResult>& results) {
  std::string out = fmt::format(
      "{{{}, \"target\": {}, \"backend\": {}, \"prep\": {}, \"area_offset\": {}, \"area_size\": {}, "
      "\"buffered\": {}, \"results\": [",
      JsonSchemaMembers("bench", 1), JsonString(info.target), JsonString(info.backend), JsonString(info.prep), info.area_offset,
      info.area_size, info.buffered ? "true" : "false");
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const Rates x = RatesOf(r);
    out += fmt::format(
        "{}\n  {{\"direction\": \"{}\", \"mode\": \"{}\", \"depth\": {}, \"request_bytes\": {}, "
        "\"count\": {}, \"bytes\": {}, \"ns\": {}, \"kB_per_s\": {}, \"KiB_per_s\": {}, "
        "\"iops\": {}.{:02}, \"MiB_per_s\": {:.3f}}}",
        i ? "," : "", DirectionName(r.direction), ModeName(r.mode), r.depth, r.request, r.count,
        r.bytes(), r.ns, x.kb_per_s, x.kib_per_s, x.iops_x100 / 100, x.iops_x100 % 100, x.mib_per_s);
  }
  return out + "\n]}\n";
}

}  // namespace flashpipe::bench
