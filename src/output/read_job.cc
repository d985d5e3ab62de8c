#include "output/read_job.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "base/json.h"
#include "input/write_report.h"
#include "io/image_reader.h"
#include "output/bmap_writer.h"
#include "output/output_file.h"
#include "output/verify.h"
#include "sparse/part_files.h"

namespace flashpipe::output {
namespace {

Format FormatOf(const ReadRequest& r) {
  return r.format.value_or(r.output == "-" ? Format::kRaw : FormatForPath(r.output));
}

// The sinks of one pass over the source.
struct Pipeline {
  std::unique_ptr<sparse::FdOutput> bytes;  // sparse and compressed output
  std::unique_ptr<RunSink> output;
  std::unique_ptr<BmapWriter> bmap;
  std::unique_ptr<TeeSink> tee;
};

class ReadJob {
 public:
  ReadJob(const ReadRequest& req, input::Progress* progress, const std::function<void(const std::string&)>& warn,
          ReadReport* report)
      : req_(req), format_(FormatOf(req)), progress_(progress), warn_(warn), report_(*report) {}

  Status Run() {
    FP_RETURN_IF_ERROR(CheckReadRequest(req_));
    FP_RETURN_IF_ERROR(Open());
    bool plan = format_ == Format::kSparse && !Seekable();
    reading_passes_ = plan ? 2 : 1;
    report_.passes = reading_passes_ + (req_.verify ? 1 : 0);
    FP_ASSIGN_OR_RETURN(queue_, src_.target->MakeQueue(req_.queue.backend, req_.queue.queue_depth));
    report_.backend = std::string(queue_->name());
    Begin(input::Phase::kReading, uint64_t{reading_passes_} * src_.length);
    if (plan) FP_RETURN_IF_ERROR(Pass(SparseOutput::Mode::kPlan));
    FP_RETURN_IF_ERROR(Pass(plan ? SparseOutput::Mode::kFromPlan : SparseOutput::Mode::kPatch));
    if (req_.max_size > 0) {
      FP_RETURN_IF_ERROR(Cut());  // verifies the parts before they go into place
    } else if (req_.verify) {
      FP_RETURN_IF_ERROR(Verify({image_->fd()}, {image_->name()}));
    }
    return Commit();
  }

 private:
  Status Open();
  Result<Pipeline> Build(SparseOutput::Mode mode);
  Status Pass(SparseOutput::Mode mode);
  Status Cut();
  Status Verify(const std::vector<int>& fds, const std::vector<std::string>& names);
  Status Commit();
  uint64_t OutputSize(const Pipeline& p) const;
  void Begin(input::Phase phase, uint64_t total) {
    if (progress_) progress_->Begin(phase, total);
  }
  void Update(uint64_t done, uint64_t total) {
    if (progress_) progress_->Update(done, total);
  }
  bool Seekable() const { return staging_.valid() || image_->regular(); }
  int OutputFd() const { return staging_.valid() ? staging_.get() : image_->fd(); }
  const std::string& OutputName() const { return image_ ? image_->name() : req_.output; }

  const ReadRequest& req_;
  Format format_;
  input::Progress* progress_;
  const std::function<void(const std::string&)>& warn_;
  ReadReport& report_;
  ReadSource src_;
  std::optional<OutputFile> image_, bmap_;
  UniqueFd staging_;               // --max-size: the whole sparse image, before it is cut
  std::unique_ptr<io::IoQueue> queue_;
  SparsePlan plan_;
  unsigned pass_ = 0, reading_passes_ = 1;
};

Status ReadJob::Open() {
  FP_ASSIGN_OR_RETURN(src_, OpenSource(req_.source));
  report_.source = src_.Describe();
  report_.start = src_.start;
  report_.length = src_.length;
  for (const std::string& w : src_.warnings) {
    report_.warnings.push_back(w);
    if (warn_) warn_(w);
  }
  // Every check first, then the files.
  if (req_.max_size > 0) {  // parts OUTPUT.N, checked and created when they are cut
    FP_RETURN_IF_ERROR(NotTheSource(req_.output, src_.id, "output"));
  } else {
    FP_ASSIGN_OR_RETURN(OutputFile image, OutputFile::Check(req_.output, src_.id, "output"));
    image_.emplace(std::move(image));
    if (req_.verify && !image_->regular()) {
      return InvalidArgument(fmt::format("--verify reads the output back: {} is not a regular file", image_->name()));
    }
  }
  if (!req_.bmap.empty()) {
    if (req_.bmap == req_.output) return InvalidArgument("the bmap and the output are the same file");
    FP_ASSIGN_OR_RETURN(OutputFile bmap, OutputFile::Check(req_.bmap, src_.id, "bmap"));
    if (!bmap.regular()) return InvalidArgument(fmt::format("the bmap {} must be a regular file", req_.bmap));
    bmap_.emplace(std::move(bmap));
  }
  if (image_) FP_RETURN_IF_ERROR(image_->Open());
  if (bmap_) FP_RETURN_IF_ERROR(bmap_->Open());
  if (req_.max_size > 0) {
    FP_ASSIGN_OR_RETURN(staging_, AnonymousFileBeside(req_.output));
  }
  return Status::Ok();
}

Result<Pipeline> ReadJob::Build(SparseOutput::Mode mode) {
  Pipeline p;
  const uint64_t length = src_.length;
  int fd = OutputFd();
  const std::string& name = OutputName();
  if (format_ == Format::kRaw && Seekable()) {
    FP_ASSIGN_OR_RETURN(p.output, RawFileOutput::Create(fd, name, length, req_.queue));
  } else if (format_ == Format::kRaw) {
    p.output = std::make_unique<StreamOutput>(fd, name);
  } else if (format_ == Format::kSparse) {
    if (mode != SparseOutput::Mode::kPlan) p.bytes = std::make_unique<sparse::FdOutput>(fd, name);
    FP_ASSIGN_OR_RETURN(p.output, SparseOutput::Create(p.bytes.get(), length, mode, req_.sparse, &plan_));
  } else {
    p.bytes = std::make_unique<sparse::FdOutput>(fd, name);
    CompressOptions co = req_.compress;
    co.size_hint = length;
    FP_ASSIGN_OR_RETURN(auto c, MakeCompressor(format_, p.bytes.get(), co));
    report_.compress_threads = c->threads();
    p.output = std::make_unique<CompressOutput>(std::move(c));
  }
  std::vector<RunSink*> sinks{p.output.get()};
  if (bmap_ && mode != SparseOutput::Mode::kPlan) {
    // A device has no holes: there, only non-zero blocks are mapped.
    BmapOptions bo{.map_read_zeros = !req_.zeros_unmapped && !src_.block_device};
    FP_ASSIGN_OR_RETURN(p.bmap, BmapWriter::Create(bmap_->fd(), req_.bmap, length, bo));
    sinks.push_back(p.bmap.get());
  }
  p.tee = std::make_unique<TeeSink>(std::move(sinks));
  return p;
}

uint64_t ReadJob::OutputSize(const Pipeline& p) const {
  if (auto* s = dynamic_cast<const SparseOutput*>(p.output.get())) return s->bytes();
  if (auto* c = dynamic_cast<const CompressOutput*>(p.output.get())) return c->compressor().bytes_out();
  return src_.length;
}

Status ReadJob::Pass(SparseOutput::Mode mode) {
  FP_ASSIGN_OR_RETURN(Pipeline p, Build(mode));
  FP_ASSIGN_OR_RETURN(auto reader, io::ImageReader::Create(*src_.target, queue_.get(), 0, src_.length,
                                                           {.request_size = req_.queue.request_size}));
  const uint64_t before = uint64_t{pass_++} * src_.length, total = uint64_t{reading_passes_} * src_.length;
  auto progress = [&](uint64_t done) { Update(before + done, total); };
  FP_ASSIGN_OR_RETURN(report_.scan, Pump(*reader, 0, src_.length, *p.tee, progress, req_.cancel));
  report_.output_bytes = OutputSize(p);
  if (p.bmap) report_.mapped_blocks = p.bmap->mapped_blocks();
  return Status::Ok();
}

// --max-size: the staged sparse image cut into parts as `flashpipe resparse`
// cuts them; all of them go into place together, after verify, or none.
Status ReadJob::Cut() {
  sparse::InputFile in;
  in.name = OutputName() + " (staged sparse image)";
  in.fd = UniqueFd(::fcntl(staging_.get(), F_DUPFD_CLOEXEC, 0));
  if (!in.fd.valid()) return ErrnoError("dup the staged sparse image");
  FP_ASSIGN_OR_RETURN(in.id, FileIdOfFd(in.fd.get(), in.name));
  in.holds_data = in.seekable = true;
  auto check = [&](std::span<const std::string> temps) -> Status {
    std::vector<UniqueFd> open;
    std::vector<int> fds;
    std::vector<std::string> names;
    report_.output_bytes = 0;
    for (size_t i = 0; i < temps.size(); ++i) {
      names.push_back(sparse::PartPath(req_.output, i));
      FP_RETURN_IF_ERROR(NotTheSource(names.back(), src_.id, "part"));
      open.emplace_back(::open(temps[i].c_str(), O_RDONLY | O_CLOEXEC));
      if (!open.back().valid()) return ErrnoError(fmt::format("open {}", temps[i]));
      fds.push_back(open.back().get());
      off_t end = ::lseek(fds.back(), 0, SEEK_END);
      if (end > 0) report_.output_bytes += static_cast<uint64_t>(end);
    }
    report_.parts = names;
    FP_RETURN_IF_ERROR(req_.verify ? Verify(fds, names) : Status::Ok());
    Begin(input::Phase::kSyncing, 0);
    return CheckCancel(req_.cancel);  // the parts go into place after this, or not at all
  };
  Begin(input::Phase::kWriting, 0);
  return sparse::ResparseToFiles(in, req_.output, req_.max_size, check).status();
}

Status ReadJob::Verify(const std::vector<int>& fds, const std::vector<std::string>& names) {
  FP_ASSIGN_OR_RETURN(auto reader, io::ImageReader::Create(*src_.target, queue_.get(), 0, src_.length,
                                                           {.request_size = req_.queue.request_size}));
  VerifyTarget t{.format = format_, .fds = fds, .names = names, .length = src_.length, .queue = req_.queue,
                 .cancel = req_.cancel};
  t.progress = [&](uint64_t done) { Update(done, src_.length); };
  Begin(input::Phase::kVerifying, src_.length);
  Status s = VerifyOutput(*reader, src_.path, t);
  // The output read back wrong (different bytes, or not decodable): failed;
  // an I/O error or an interrupt: the check did not run to its end.
  const bool wrong = s.code() == Code::kMismatch || s.code() == Code::kCorrupt;
  report_.verify = s.ok() ? input::VerifyOutcome::kPassed
                   : wrong ? input::VerifyOutcome::kFailed
                           : input::VerifyOutcome::kNotRun;
  if (s.ok()) Update(src_.length, src_.length);
  return s;
}

Status ReadJob::Commit() {
  FP_RETURN_IF_ERROR(CheckCancel(req_.cancel));  // an interrupt before the renames: none of them
  if (req_.max_size == 0) Begin(input::Phase::kSyncing, 0);
  if (image_) FP_RETURN_IF_ERROR(image_->Commit());
  if (bmap_) FP_RETURN_IF_ERROR(bmap_->Commit());
  if (progress_) progress_->End();
  return Status::Ok();
}

}  // namespace

Status CheckReadRequest(const ReadRequest& r) {
  Format f = FormatOf(r);
  if (r.max_size > 0 && f != Format::kSparse) {
    return InvalidArgument("--max-size cuts sparse images: add --format sparse or name the output .simg");
  }
  if (r.max_size > 0 && r.output == "-") return InvalidArgument("--max-size writes OUTPUT.0, OUTPUT.1, ...: not stdout");
  if (r.sparse.dont_care_zeros && f != Format::kSparse) return InvalidArgument("--dont-care-zeros is for sparse output");
  if (r.compress.level != -1) FP_RETURN_IF_ERROR(CheckLevel(f, r.compress.level));
  if (r.verify && r.output == "-") return InvalidArgument("--verify reads the output back: not possible on stdout");
  if (r.zeros_unmapped && r.bmap.empty()) return InvalidArgument("--zeros-unmapped is for --bmap");
  return Status::Ok();
}

ReadReport RunRead(const ReadRequest& request, input::Progress* progress,
                   const std::function<void(const std::string&)>& warn) {
  auto t0 = std::chrono::steady_clock::now();
  ReadReport r;
  r.output = request.output;
  r.bmap = request.bmap;
  r.format = std::string(FormatName(FormatOf(request)));
  ReadJob job(request, progress, warn, &r);
  r.status = job.Run();
  if (!r.status.ok() && request.cancel != nullptr && request.cancel->cancelled()) {
    r.signal = request.cancel->signal();
    r.status = request.cancel->Check();  // what failed after the signal is its consequence
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (progress != nullptr) {
    progress->Stop();
    r.phases = {progress->seconds(input::Phase::kReading), progress->seconds(input::Phase::kWriting),
                progress->seconds(input::Phase::kVerifying), progress->seconds(input::Phase::kSyncing)};
  }
  return r;
}

std::string_view ReadReport::error_class() const {
  if (status.ok()) return "";
  if (interrupted()) return "interrupted";
  if (verify == input::VerifyOutcome::kFailed) return "verify_mismatch";
  return input::ErrorClass(status.code());
}

std::string ReadReportJson(const ReadReport& r) {
  std::string parts, warnings;
  for (const auto& p : r.parts) parts += (parts.empty() ? "" : ", ") + JsonString(p);
  for (const auto& w : r.warnings) warnings += (warnings.empty() ? "" : ", ") + JsonString(w);
  double mib_s = r.seconds > 0 ? static_cast<double>(r.length) / r.seconds / (1 << 20) : 0;
  auto secs = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string("null"); };
  std::string_view error_class = r.error_class();
  return fmt::format(
      "{{{}, \"ok\": {}, \"interrupted\": {}, \"signal\": {}, "
      "\"source\": {}, \"offset\": {}, \"length\": {}, \"output\": {}, \"format\": {}, "
      "\"parts\": [{}], \"bmap\": {}, \"backend\": {}, \"data_bytes\": {}, \"zero_bytes\": {}, \"hole_bytes\": {}, "
      "\"output_bytes\": {}, \"mapped_blocks\": {}, \"compress_threads\": {}, \"passes\": {}, \"seconds\": {:.3f}, "
      "\"phases\": {{\"read\": {}, \"write\": {}, \"verify\": {}, \"sync\": {}}}, "
      "\"mib_per_s\": {:.1f}, \"verify\": {}, \"warnings\": [{}], \"error\": {}, \"error_class\": {}}}",
      JsonSchemaMembers("read", 1), r.status.ok(), r.interrupted(), r.signal ? JsonString(SignalName(r.signal)) : "null", JsonString(r.source),
      r.start, r.length, JsonString(r.output), JsonString(r.format), parts,
      r.bmap.empty() ? "null" : JsonString(r.bmap), JsonString(r.backend), r.scan.data_bytes, r.scan.zero_bytes,
      r.scan.hole_bytes, r.output_bytes, r.mapped_blocks, r.compress_threads, r.passes, r.seconds,
      secs(r.phases.read), secs(r.phases.write), secs(r.phases.verify), secs(r.phases.sync), mib_s,
      JsonString(input::VerifyName(r.verify)), warnings, r.status.ok() ? "null" : JsonString(r.status.ToString()),
      error_class.empty() ? "null" : JsonString(error_class));
}

}  // namespace flashpipe::output
