#include "host/image_pass.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd_io.h"
#include "base/unique_fd.h"
#include "input/detect.h"

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
    if (r.type == sparse::kChunkRaw) plan_->payload_bytes += uint64_t{r.blocks} * plan_->shape.blk_sz;
    return Status::Ok();
  }

 private:
  ImagePlan* plan_;
};

bool SeekableFile(const std::string& path) {
  struct stat st;
  return path != "-" && ::stat(path.c_str(), &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

bool Compressed(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  uint8_t head[input::kDetectBytes] = {};
  auto n = fd.valid() ? PreadUpTo(fd.get(), head, 0, path) : Result<size_t>(size_t{0});
  return n.ok() && input::IsCompressed(input::DetectKind(std::span<const uint8_t>(head, *n)));
}

}  // namespace

Status RunImagePass(const ImageSpec& spec, bool with_payload, RecordOut* out, input::ImageForm* form) {
  if (spec.path != "-" && spec.path.find(',') != std::string::npos && !SeekableFile(spec.path)) {
    return InvalidArgument(fmt::format("'{}': flash parts of a split image as separate steps "
                                       "(PART=a.simg PART=b.simg), one after the other", spec.path));
  }
  input::SourceOptions options;
  options.bmap_path = spec.bmap;
  options.decoder.check_crc = with_payload;
  FP_ASSIGN_OR_RETURN(auto source, input::OpenImage(spec.path, options));
  input::ImageForm f = source->form();
  if (form != nullptr) *form = f;
  RecordSinkOptions sink_options{.sparse_input = f.sparse, .with_payload = with_payload, .bmap = f.bmap};
  if (!f.sparse) sink_options.raw_size = source->known_size();
  RecordSink sink(out, sink_options);
  FP_RETURN_IF_ERROR(source->Run(&sink));
  return sink.Finish(source->image_size());
}

bool Rereadable(const ImageSpec& spec) { return SeekableFile(spec.path); }

Result<std::shared_ptr<const ImagePlan>> PlanImage(const ImageSpec& spec) {
  if (!SeekableFile(spec.path) || Compressed(spec.path)) return std::shared_ptr<const ImagePlan>();
  auto plan = std::make_shared<ImagePlan>();
  PlanOut out(plan.get());
  FP_RETURN_IF_ERROR(RunImagePass(spec, false, &out, &plan->form));
  return std::shared_ptr<const ImagePlan>(std::move(plan));
}

}  // namespace flashpipe::host
