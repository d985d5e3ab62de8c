#include "host/image_pass.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fd_io.h"
#include "base/unique_fd.h"
#include "input/detect.h"
#include "input/image_source.h"

namespace flashpipe::host {
namespace {

// Collects a planning pass.
class PlanOut : public RecordOut {
 public:
  explicit PlanOut(ImagePlan* plan) : plan_(plan) {}
  Status OnShape(const ImageShape& shape) override {
    plan_->shape = shape;
    return Status::Ok();
  }
  Status OnPayload(std::span<const uint8_t>) override { return Internal("payload in a planning pass"); }
  Status OnRecord(const Record& r) override {
    plan_->records.push_back(r);
    if (r.type != sparse::kChunkRaw) return Status::Ok();
    const uint64_t blk = plan_->shape.blk_sz, n = uint64_t{r.blocks} * blk;
    plan_->payload_bytes += n;
    // Raw content (a raw file, with or without a bmap): a block's bytes are
    // the file's at the block's own offset.
    if (!plan_->shape.sparse_input) OnPayloadInFile(r.payload, r.block * blk, n);
    return Status::Ok();
  }
  void OnPayloadInFile(uint64_t payload, uint64_t file, uint64_t n) override {
    auto& x = plan_->payload_in_file;
    if (!x.empty() && x.back().payload + x.back().size == payload && x.back().file + x.back().size == file) {
      x.back().size += n;
    } else {
      x.push_back({payload, file, n});
    }
  }
  Status OnCrcChunk() override {
    plan_->crc_chunks = true;
    return Status::Ok();
  }
  // Payload that is all in the file, and no CRC32 chunk to check.
  bool in_file() const {
    uint64_t covered = 0;
    for (const FileExtent& e : plan_->payload_in_file) {
      if (e.payload != covered) return false;
      covered += e.size;
    }
    // A raw file of an odd size: its last block is padded, past the file.
    bool padded = !plan_->shape.sparse_input && plan_->shape.bytes % plan_->shape.blk_sz != 0;
    return !plan_->crc_chunks && !padded && covered == plan_->payload_bytes;
  }

 private:
  ImagePlan* plan_;
};

bool SeekableFile(const std::string& path) {
  struct stat st;
  return path != "-" && ::stat(path.c_str(), &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}


}  // namespace

Status RunImagePass(const ImageSpec& spec, bool with_payload, RecordOut* out, input::ImageForm* form, bool crc) {
  if (spec.path != "-" && spec.path.find(',') != std::string::npos && !SeekableFile(spec.path)) {
    return InvalidArgument(fmt::format("'{}': flash parts of a split image as separate steps "
                                       "(PART=a.simg PART=b.simg), one after the other", spec.path));
  }
  input::SourceOptions options;
  options.bmap_path = spec.bmap;
  options.decoder.check_crc = with_payload && crc;
  // A sparse file's RAW goes by range: read straight into the window (one
  // copy), and not read at all by the planning pass.
  options.raw_by_range = true;
  FP_ASSIGN_OR_RETURN(auto source, input::OpenImage(spec.path, options));
  input::ImageForm f = source->form();
  if (form != nullptr) *form = f;
  RecordSinkOptions sink_options{.sparse_input = f.sparse, .with_payload = with_payload, .crc = with_payload && crc,
                                 .bmap = f.bmap};
  if (!f.sparse) sink_options.raw_size = source->known_size();
  RecordSink sink(out, sink_options);
  FP_RETURN_IF_ERROR(source->Run(&sink));
  return sink.Finish(source->image_size());
}

bool Rereadable(const ImageSpec& spec) { return SeekableFile(spec.path); }

Result<FileStamp> StampOfFd(int fd, const std::string& name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("cannot stat image {}", name));
  return FileStamp{FileIdOf(st), static_cast<uint64_t>(st.st_size),
                   int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

Result<std::shared_ptr<const ImagePlan>> PlanImage(const ImageSpec& spec) {
  FP_RETURN_IF_ERROR(input::CheckImagePathType(spec.path));  // /dev/zero would never end
  if (spec.path != "-" && !input::IsPartsSpec(spec.path) && ::access(spec.path.c_str(), R_OK) != 0) {
    // A missing or unreadable file is said before any device is touched.
    int e = errno;
    std::string m = fmt::format("cannot open image {}", spec.path);
    return e == ENOENT ? NotFound(fmt::format("{}: {}", m, std::strerror(e))) : IoError(m, e);
  }
  if (!SeekableFile(spec.path)) return std::shared_ptr<const ImagePlan>();
  auto plan = std::make_shared<ImagePlan>();
  // The file is stamped before and after its planning pass: one that
  // changed meanwhile is refused rather than planned from two versions.
  UniqueFd fd(::open(spec.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot open image {}", spec.path));
  FP_ASSIGN_OR_RETURN(plan->stamp, StampOfFd(fd.get(), spec.path));
  PlanOut out(plan.get());
  FP_RETURN_IF_ERROR(RunImagePass(spec, false, &out, &plan->form));
  // Payload read from the file itself only for an image that is stored as
  // it is: a compressed file's bytes are not the image's.
  if (!out.in_file() || plan->form.compression != input::ImageKind::kRaw) plan->payload_in_file.clear();
  FP_ASSIGN_OR_RETURN(FileStamp after, StampOfFd(fd.get(), spec.path));
  auto now = FileIdOfPath(spec.path);
  if (after != plan->stamp || !now.ok() || *now != plan->stamp.id) {
    return Corrupt(fmt::format("{}: the image changed while it was planned", spec.path));
  }
  return std::shared_ptr<const ImagePlan>(std::move(plan));
}

}  // namespace flashpipe::host
