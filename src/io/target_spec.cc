#include "io/target_spec.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "base/fd_io.h"
#include "base/log.h"
#include "base/unique_fd.h"
#include "io/gpt.h"

namespace flashpipe::io {

TargetSpec ParseTargetSpec(const std::string& spec) {
  TargetSpec t;
  t.path = spec;
  if (::stat(spec.c_str(), &t.st) == 0) {
    t.exists = true;
    return t;
  }
  size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) return t;
  struct stat st {};
  if (::stat(spec.substr(0, colon).c_str(), &st) != 0) return t;
  t.path = spec.substr(0, colon);
  t.partition = spec.substr(colon + 1);
  t.exists = true;
  t.st = st;
  return t;
}

Result<ByteRange> FindGptPartition(const std::string& path, const std::string& name, const Geometry& g) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot open {}", path));
  auto read_at = [&](uint64_t off, std::span<uint8_t> out) { return PreadExact(fd.get(), out, off, path); };
  auto table = ReadGpt(read_at, g.size, g.block_device ? g.logical_block : 0);
  if (!table.ok()) return table.status().WithContext(fmt::format("{}: partition '{}'", path, name));
  // A damaged table is said, never used silently ("primary GPT unusable
  // (...); using the backup at LBA N", "backup GPT unusable: ...").
  for (const auto& w : table->warnings) log::Warn("{}: {}", path, w);
  std::vector<std::string> names;
  const GptPartition* found = nullptr;
  for (const auto& p : table->partitions) {
    names.push_back(p.name);
    if (p.name != name) continue;
    if (found != nullptr) return InvalidArgument(fmt::format("{}: two GPT partitions are named '{}'", path, name));
    found = &p;
  }
  if (found == nullptr) {
    return NotFound(fmt::format("{}: no GPT partition named '{}' (there are: {})", path, name,
                                names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
  }
  uint64_t ss = table->sector_size;
  return ByteRange{found->first_lba * ss, (found->last_lba - found->first_lba + 1) * ss};
}

Result<ByteRange> PlaceWindow(const ByteRange& within, const WindowRequest& req, const WindowNames& n) {
  if (req.offset > within.size) {
    return InvalidArgument(
        fmt::format("--offset {} is beyond the end of {} ({} bytes)", req.offset, n.what, within.size));
  }
  uint64_t left = within.size - req.offset;
  if (req.size && *req.size > left) {
    return NoSpace(fmt::format("{} holds only {} bytes from offset {}; {} asks for {} ({} more)", n.what, left,
                               req.offset, n.size_flag, *req.size, *req.size - left));
  }
  ByteRange w{within.offset + req.offset, req.size.value_or(left)};
  if (w.size == 0) {
    return InvalidArgument(fmt::format("nothing to {}: {} has no bytes from offset {}", n.verb, n.what, req.offset));
  }
  return w;
}

namespace {

Status CheckAligned(const ByteRange& w, const Geometry& g, const WindowRequest& req, const std::string& what,
                    const std::string& path) {
  const uint64_t lb = g.logical_block;
  if (w.offset % lb != 0) {
    return InvalidArgument(fmt::format("{}: the window starts at byte {} (--offset {}), not a multiple of the "
                                       "{}-byte logical block of {}; nothing written",
                                       what, w.offset, req.offset, lb, path));
  }
  if (w.size % lb != 0 && w.offset + w.size != g.size) {
    return InvalidArgument(fmt::format("{}: the window's size {} (--size) is not a multiple of the {}-byte logical "
                                       "block of {}; nothing written", what, w.size, lb, path));
  }
  return Status::Ok();
}

}  // namespace

bool IsWindowed(const TargetSpec& spec, const WindowRequest& req) {
  return !spec.partition.empty() || req.offset != 0 || req.size.has_value();
}

Result<TargetWindow> SetWriteWindow(const TargetSpec& spec, const WindowRequest& req, Target* target) {
  const Geometry& g = target->geometry();
  TargetWindow w{.range = {0, g.size}, .what = spec.path};
  if (!spec.partition.empty()) {
    FP_ASSIGN_OR_RETURN(w.range, FindGptPartition(spec.path, spec.partition, g));
    w.what = fmt::format("{} partition '{}'", spec.path, spec.partition);
  }
  FP_ASSIGN_OR_RETURN(w.range, PlaceWindow(w.range, req, {.what = w.what}));
  if (req.offset != 0) w.what += fmt::format(" from offset {}", req.offset);
  FP_RETURN_IF_ERROR(CheckAligned(w.range, g, req, w.what, spec.path));
  FP_RETURN_IF_ERROR(target->SetWindow(w.range.offset, w.range.size));
  return w;
}

}  // namespace flashpipe::io
