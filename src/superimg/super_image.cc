#include "superimg/super_image.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>

#include "base/atomic_file.h"
#include "base/file_id.h"
#include "lp/writer.h"
#include "sparse/encoding_sink.h"
#include "sparse/expand.h"
#include "superimg/extent_sink.h"

namespace flashpipe::superimg {
namespace {

struct Job {
  std::string partition;
  std::string path;
  std::unique_ptr<input::ImageSource> source;
  std::vector<Piece> pieces;
};

Status CheckLayout(const lp::Metadata& m, uint32_t block) {
  if (m.block_devices.size() != 1) {
    return Unsupported(fmt::format("the metadata spans {} block devices; flashpipe writes a super image of one",
                                   m.block_devices.size()));
  }
  if (block == 0 || block % lp::kSectorSize != 0 || lp::kGeometryBlockSize % block != 0) {
    return InvalidArgument(fmt::format("block size {} is not a multiple of 512 that divides 4096", block));
  }
  if (m.block_devices[0].size % block != 0 || m.geometry.metadata_max_size % block != 0) {
    return InvalidArgument(fmt::format("the super size {} and metadata size {} must be multiples of the block size {}",
                                       m.block_devices[0].size, m.geometry.metadata_max_size, block));
  }
  return Status::Ok();
}

Status CheckExtents(const lp::Metadata& m, const lp::PartitionEntry& p, uint32_t block) {
  for (const auto& e : lp::ExtentsOf(m, p)) {
    if (e.target_type != lp::kTargetLinear) {
      return Unsupported(fmt::format("partition {} has a ZERO extent: an image cannot be stored there", p.name));
    }
    if (e.target_data * lp::kSectorSize % block != 0 || e.num_sectors * lp::kSectorSize % block != 0) {
      return InvalidArgument(fmt::format("partition {}: the extent at sector {} ({} sectors) is not on {}-byte "
                                         "blocks", p.name, e.target_data, e.num_sectors, block));
    }
  }
  return Status::Ok();
}

Result<Job> OpenJob(const lp::Metadata& m, const PartitionImage& image, uint32_t block) {
  const lp::PartitionEntry* p = lp::FindPartition(m, image.partition);
  if (p == nullptr) return NotFound(fmt::format("an image is given for {}, which is not a partition", image.partition));
  FP_RETURN_IF_ERROR(CheckExtents(m, *p, block));
  Job job{p->name, image.path, nullptr, PiecesOf(m, *p)};
  FP_ASSIGN_OR_RETURN(job.source, input::OpenImage(image.path, {}));
  if (job.source->kind().starts_with("parts")) {
    return Unsupported(fmt::format("{}: sparse parts laid over each other cannot be a partition image", image.path));
  }
  const uint64_t size = lp::PartitionSize(m, *p);
  if (auto known = job.source->known_size(); known && *known > size) {
    return NoSpace(fmt::format("image {} ({} bytes) does not fit partition {} ({} bytes)", image.path, *known,
                               p->name, size));
  }
  return job;
}

// One pass in device order needs each imaged partition's extents to rise
// and no two partitions to interleave: true of every layout `lp make` builds.
Status CheckOrder(const std::vector<Job>& jobs) {
  uint64_t end = 0;
  std::string last = "the metadata area";
  for (const auto& job : jobs) {
    for (const auto& piece : job.pieces) {
      if (piece.device_offset < end) {
        return Unsupported(fmt::format("partition {} has an extent at byte 0x{:x}, before the end of {}; flashpipe "
                                       "writes a super image in one pass, in device order", job.partition,
                                       piece.device_offset, last));
      }
      end = piece.device_offset + piece.length;
    }
    last = fmt::format("partition {}", job.partition);
  }
  return Status::Ok();
}

Result<std::vector<Job>> Plan(const lp::Metadata& m, const std::vector<PartitionImage>& images,
                              const std::string& out_path, uint32_t block) {
  FP_ASSIGN_OR_RETURN(std::optional<FileId> out_id, FileIdOfPath(out_path));
  std::map<std::string, std::string> seen;
  std::vector<Job> jobs;
  for (const auto& image : images) {
    if (auto [it, added] = seen.emplace(image.partition, image.path); !added) {
      return InvalidArgument(fmt::format("two images for partition {}: {} and {}", image.partition, it->second,
                                         image.path));
    }
    FP_ASSIGN_OR_RETURN(std::optional<FileId> id, FileIdOfPath(image.path));
    if (out_id && id && *out_id == *id) {
      return InvalidArgument(fmt::format("the output {} is the image of partition {}", out_path, image.partition));
    }
    FP_ASSIGN_OR_RETURN(Job job, OpenJob(m, image, block));
    if (!job.pieces.empty()) jobs.push_back(std::move(job));
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const Job& a, const Job& b) { return a.pieces[0].device_offset < b.pieces[0].device_offset; });
  FP_RETURN_IF_ERROR(CheckOrder(jobs));
  return jobs;
}

// Reserved zeros, two geometry copies, 2 x slots metadata copies padded.
Status EmitMetadata(const lp::Metadata& m, sparse::Sink& sink) {
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> geometry, lp::SerializeGeometry(m.geometry));
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, lp::SerializeMetadata(m));
  FP_RETURN_IF_ERROR(sink.OnFill(0, lp::kReservedBytes, 0));
  FP_RETURN_IF_ERROR(sink.OnRaw(lp::kPrimaryGeometryOffset, geometry));
  FP_RETURN_IF_ERROR(sink.OnRaw(lp::kBackupGeometryOffset, geometry));
  const uint64_t pad = m.geometry.metadata_max_size - blob.size();
  // In device order: every primary, then every backup (backup of slot s is
  // where a primary of slot n + s would be).
  for (uint32_t copy = 0; copy < 2 * m.geometry.metadata_slot_count; ++copy) {
    const uint64_t at = lp::PrimaryMetadataOffset(m.geometry, copy);
    FP_RETURN_IF_ERROR(sink.OnRaw(at, blob));
    if (pad > 0) FP_RETURN_IF_ERROR(sink.OnFill(at + blob.size(), pad, 0));
  }
  return Status::Ok();
}

Status Stream(const lp::Metadata& m, std::vector<Job>& jobs, sparse::Sink& sink) {
  FP_RETURN_IF_ERROR(EmitMetadata(m, sink));
  for (auto& job : jobs) {
    ExtentSink es(fmt::format("image {} for partition {}", job.path, job.partition), job.pieces, &sink);
    FP_RETURN_IF_ERROR(job.source->Run(&es));
  }
  return Status::Ok();
}

}  // namespace

Status WriteSuperImage(const lp::Metadata& m, const std::vector<PartitionImage>& images,
                       const std::string& out_path, const SuperImageOptions& options) {
  FP_RETURN_IF_ERROR(CheckLayout(m, options.block_size));
  FP_ASSIGN_OR_RETURN(std::vector<Job> jobs, Plan(m, images, out_path, options.block_size));
  const uint64_t size = m.block_devices[0].size;
  FP_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(out_path));
  if (options.sparse) {
    sparse::FdOutput output(out.fd(), out.temp_path());
    FP_ASSIGN_OR_RETURN(auto sink, sparse::EncodingSink::Create(&output, options.block_size, size));
    FP_RETURN_IF_ERROR(Stream(m, jobs, *sink));
    FP_RETURN_IF_ERROR(sink->Finish());
  } else {
    if (::ftruncate(out.fd(), static_cast<off_t>(size)) != 0) {
      return ErrnoError(fmt::format("resize {} to {} bytes", out.temp_path(), size));
    }
    sparse::FdImageSink sink(out.fd(), out.temp_path(), sparse::FdImageSink::Kind::kFile, size);
    FP_RETURN_IF_ERROR(Stream(m, jobs, sink));
    FP_RETURN_IF_ERROR(sink.Finish());  // the sink writes on a thread of its own: its errors come here
  }
  return out.Commit();
}

Result<uint64_t> ImageSize(const std::string& path) {
  FP_ASSIGN_OR_RETURN(auto source, input::OpenImage(path, {}));
  auto size = source->known_size();
  if (!size) return Unsupported(fmt::format("the size of {} is only known after reading it; give the size", path));
  return *size;
}

}  // namespace flashpipe::superimg
