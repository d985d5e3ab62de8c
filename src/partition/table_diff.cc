#include "partition/table_diff.h"

#include <fmt/format.h>

#include "base/units.h"

namespace flashpipe::partition {
namespace {

std::string Label(const Partition& p) { return p.name.empty() ? fmt::format("#{}", p.number) : p.name; }

const Partition* Match(const Table& t, const Partition& p) {
  for (const Partition& q : t.partitions) {
    if (p.name.empty() ? q.name.empty() && q.number == p.number : q.name == p.name) return &q;
  }
  return nullptr;
}

uint64_t Bytes(const Table& t, const Partition& p) { return p.size * t.sector_size; }

}  // namespace

std::vector<std::string> DescribeChanges(const std::optional<Table>& old, const Table& now) {
  std::vector<std::string> out;
  size_t unchanged = 0;
  for (const Partition& p : now.partitions) {
    const Partition* was = old ? Match(*old, p) : nullptr;
    if (was == nullptr) {
      out.push_back(fmt::format("added {} {}", Label(p), FormatBytes(Bytes(now, p))));
    } else if (Bytes(*old, *was) != Bytes(now, p)) {
      out.push_back(fmt::format("resized {} {} -> {}", Label(p), FormatBytes(Bytes(*old, *was)),
                                FormatBytes(Bytes(now, p))));
    } else if (was->start * old->sector_size != p.start * now.sector_size) {
      out.push_back(fmt::format("moved {}", Label(p)));
    } else {
      ++unchanged;
    }
  }
  if (old) {
    for (const Partition& p : old->partitions) {
      if (Match(now, p) == nullptr) out.push_back(fmt::format("removed {}", Label(p)));
    }
  }
  if (out.empty()) return {"no change"};
  if (unchanged > 0) out.push_back(fmt::format("{} unchanged", unchanged));
  return out;
}

}  // namespace flashpipe::partition
