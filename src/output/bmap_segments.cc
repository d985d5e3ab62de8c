#include "output/bmap_segments.h"

#include <unistd.h>

#include <cerrno>
#include <optional>

#include "output/run_sink.h"

namespace flashpipe::output {
namespace {

struct Extent {
  uint64_t data, hole;  // [data, hole) is stored
};

// The stored extents of the file's [offset, end), counted from offset, or
// nullopt without SEEK_DATA.
Result<std::optional<std::vector<Extent>>> Extents(int fd, uint64_t offset, uint64_t length, std::string_view name) {
  std::vector<Extent> out;
  const uint64_t end = offset + length;
  for (uint64_t pos = offset; pos < end;) {
    off_t d = ::lseek(fd, static_cast<off_t>(pos), SEEK_DATA);
    if (d < 0 && errno == ENXIO) break;
    if (d < 0 && (errno == EINVAL || errno == EOPNOTSUPP)) return std::optional<std::vector<Extent>>();
    if (d < 0) return ErrnoError(fmt::format("lseek(SEEK_DATA) {} at byte 0x{:x}", name, pos));
    if (static_cast<uint64_t>(d) >= end) break;
    off_t h = ::lseek(fd, d, SEEK_HOLE);
    if (h < 0) return ErrnoError(fmt::format("lseek(SEEK_HOLE) {} at byte 0x{:x}", name, d));
    uint64_t hole = std::min<uint64_t>(end, static_cast<uint64_t>(h));
    out.push_back({static_cast<uint64_t>(d) - offset, hole - offset});
    pos = hole;
  }
  return std::optional<std::vector<Extent>>(std::move(out));
}

}  // namespace

Result<std::vector<Segment>> SplitAtHoles(int fd, uint64_t offset, uint64_t length, unsigned n,
                                          std::string_view name) {
  FP_ASSIGN_OR_RETURN(auto extents, Extents(fd, offset, length, name));
  if (!extents || n <= 1 || extents->size() < 2) {
    uint64_t stored = length;
    if (extents) {
      stored = 0;
      for (const Extent& e : *extents) stored += e.hole - e.data;
    }
    return std::vector<Segment>{{0, length, stored}};
  }
  uint64_t total = 0;
  for (const Extent& e : *extents) total += e.hole - e.data;
  std::vector<Segment> out;
  uint64_t start = 0, before = 0, start_before = 0;  // stored bytes before extent i / the segment
  for (size_t i = 0; i + 1 < extents->size() && out.size() + 1 < n; ++i) {
    before += (*extents)[i].hole - (*extents)[i].data;
    uint64_t cut = ((*extents)[i].hole + kRunBlock - 1) / kRunBlock * kRunBlock;
    if (cut + kRunBlock > (*extents)[i + 1].data) continue;  // no whole hole block here
    // Cut once this segment holds its share of what is left.
    uint64_t share = (total - start_before) / (n - out.size());
    if (before - start_before < share) {
      // ...unless stopping here is nearer the share than the next extent.
      uint64_t next = before + ((*extents)[i + 1].hole - (*extents)[i + 1].data);
      if (next - start_before <= share || next - start_before - share < share - (before - start_before)) continue;
    }
    out.push_back({start, cut, before - start_before});
    start = cut;
    start_before = before;
  }
  out.push_back({start, length, total - start_before});
  return out;
}

}  // namespace flashpipe::output
