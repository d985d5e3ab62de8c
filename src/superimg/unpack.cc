#include "superimg/unpack.h"

#include <unistd.h>

#include <algorithm>
#include <memory>

#include "base/atomic_file.h"
#include "base/fd_io.h"
#include "base/zero.h"
#include "lp/builder.h"

namespace flashpipe::superimg {
namespace {

constexpr size_t kBuffer = size_t{1} << 20;

Result<std::vector<const lp::PartitionEntry*>> Select(const lp::Metadata& m, const UnpackOptions& o) {
  std::vector<const lp::PartitionEntry*> out;
  for (const auto& name : o.partitions) {
    const lp::PartitionEntry* p = lp::FindPartition(m, name);
    if (p == nullptr) return NotFound(fmt::format("no partition {} in the metadata", name));
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  if (o.partitions.empty()) {
    for (const auto& p : m.partitions) out.push_back(&p);
  }
  // No partition is larger than the devices that hold it: a ZERO extent
  // (it needs no space) must not make a file larger than the super.
  uint64_t room = 0;
  for (const auto& d : m.block_devices) room += d.size;
  for (const auto* p : out) {
    FP_RETURN_IF_ERROR(lp::CheckName("partition", p->name));
    if (lp::PartitionSize(m, *p) > room) {
      return InvalidArgument(fmt::format("partition {} is {} bytes, more than the {} bytes of its block devices: "
                                         "its metadata is not to be trusted",
                                         p->name, lp::PartitionSize(m, *p), room));
    }
  }
  return out;
}

// Writes the non-zero blocks of `data` (partition bytes at `at`).
Status WriteNonZero(int fd, const std::string& name, std::span<const uint8_t> data, uint64_t at, uint32_t block) {
  size_t run = 0, i = 0;
  for (; i < data.size(); i += block) {
    const size_t n = std::min<size_t>(block, data.size() - i);
    if (!IsAllZero(data.subspan(i, n))) continue;
    if (run < i) FP_RETURN_IF_ERROR(PwriteAll(fd, data.subspan(run, i - run), at + run, name));
    run = i + n;
  }
  if (run < data.size()) FP_RETURN_IF_ERROR(PwriteAll(fd, data.subspan(run), at + run, name));
  return Status::Ok();
}

Status Extract(lp::BlockIo& super, const lp::Metadata& m, const lp::PartitionEntry& p, AtomicFile& out,
               uint8_t* buf) {
  const uint64_t size = lp::PartitionSize(m, p);
  if (::ftruncate(out.fd(), static_cast<off_t>(size)) != 0) {
    return ErrnoError(fmt::format("resize {} to {} bytes", out.temp_path(), size));
  }
  uint64_t at = 0;
  for (const auto& e : lp::ExtentsOf(m, p)) {
    const uint64_t len = e.num_sectors * lp::kSectorSize;
    for (uint64_t done = 0; e.target_type == lp::kTargetLinear && done < len;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kBuffer, len - done));
      FP_RETURN_IF_ERROR(super.Read(e.target_data * lp::kSectorSize + done, {buf, n}));
      FP_RETURN_IF_ERROR(WriteNonZero(out.fd(), out.temp_path(), {buf, n}, at + done, m.geometry.logical_block_size));
      done += n;
    }
    at += len;
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> Unpack(lp::BlockIo& super, const lp::Metadata& m, const std::string& dir,
                                        const UnpackOptions& options) {
  FP_ASSIGN_OR_RETURN(auto parts, Select(m, options));
  std::vector<std::string> paths;
  for (const auto* p : parts) {
    paths.push_back(fmt::format("{}/{}.img", dir, p->name));
    FP_ASSIGN_OR_RETURN(std::optional<FileId> id, FileIdOfPath(paths.back()));
    if (id && options.super_id && *id == *options.super_id) {
      return InvalidArgument(fmt::format("{} is the super image being unpacked", paths.back()));
    }
  }
  std::vector<AtomicFile> outs;
  std::unique_ptr<uint8_t[]> buf(new uint8_t[kBuffer]);
  for (size_t i = 0; i < parts.size(); ++i) {
    FP_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(paths[i], AtomicFile::InFolder()));
    FP_RETURN_IF_ERROR(Extract(super, m, *parts[i], out, buf.get()));
    FP_RETURN_IF_ERROR(out.Sync());  // durable now, no descriptor kept open
    outs.push_back(std::move(out));
  }
  for (auto& out : outs) FP_RETURN_IF_ERROR(out.Commit());
  return paths;
}

}  // namespace flashpipe::superimg
