#include "input/write_job.h"

#include <chrono>

#include "base/units.h"
#include "fetch/url.h"
#include "input/compare_sink.h"
#include "input/find_bmap.h"
#include "input/image_digest.h"
#include "input/tap_sink.h"
#include "input/write_targets.h"

namespace flashpipe::input {
namespace {

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The files the run writes besides its targets come first: until they are
// checked, the caller must not write them, not even to report a failure.
Status CheckOtherOutputs(const WriteRequest& req, WriteReport* report) {
  std::vector<InputFile> inputs = ImageFiles(req.image, req.source);
  for (const auto& [path, role] : req.other_outputs) {
    FP_RETURN_IF_ERROR(RefuseOtherOutput(path, role, req.targets, inputs));
  }
  report->other_outputs_checked = true;
  return Status::Ok();
}

// The request with the bmap found beside the image, when none was given.
WriteRequest WithBmap(const WriteRequest& req) {
  WriteRequest r = req;
  if (fetch::IsUrl(r.image)) {  // looked for beside the URL by OpenImage
    r.source.find_bmap = r.find_bmap && r.source.bmap_path.empty();
    return r;
  }
  if (!r.source.bmap_path.empty() || !r.find_bmap || r.image == "-" || IsPartsSpec(r.image)) return r;
  if (std::optional<std::string> found = FindBmap(r.image)) {
    r.source.bmap_path = *found;
    r.source.bmap_found = true;
  }
  return r;
}

// One `flashpipe write`: the checks, then the write, then what each target
// holds. Members are destroyed in reverse order: the writer (which drains
// what is in flight) before the digest, the digest (which reads the image)
// before the source, all before the targets that own the queues.
class WriteJob {
 public:
  WriteJob(const WriteRequest& req, Progress* progress, WriteReport* report)
      : req_(req), progress_(progress), report_(*report) {}

  Status Run() {
    FP_RETURN_IF_ERROR(Check());
    FP_RETURN_IF_ERROR(CheckCancel(req_.cancel));
    return Write();
  }
  // The report's results, once Run() returned `status`.
  void Conclude(Status status);

 private:
  Status Check();
  void NoteSource();
  Status Write();
  Status Complete();
  void FinishDigest();
  void OnPhase(io::WritePhase phase, uint64_t done, uint64_t total);
  VerifyOutcome VerifyOf(size_t target) const;
  TargetResult ResultOf(size_t index, const WriteTargets::Info& info, const Status& run) const;

  const WriteRequest& req_;
  Progress* progress_;
  WriteReport& report_;
  std::optional<WriteTargets> targets_;
  std::unique_ptr<ImageSource> source_;
  std::unique_ptr<ImageDigest> digest_;
  std::unique_ptr<io::ImageWriter> writer_;
  bool synced_ = false;    // every device's writes are done and synced
  bool verified_ = false;  // ...and read back
  std::optional<size_t> failed_;  // the target whose write, sync or read-back failed
};

Status WriteJob::Check() {
  targets_.emplace(WriteTargets::Check(req_.targets, {req_.force, req_.in_place, req_.window}));
  auto source = OpenImage(req_.image, req_.source);  // also after a bad target: the report gets the size
  if (source.ok()) {
    source_ = std::move(*source);
    report_.kind = source_->kind();
    report_.image_size = source_->known_size();
    NoteSource();
  }
  FP_RETURN_IF_ERROR(targets_->status());
  FP_RETURN_IF_ERROR(source.status());
  FP_RETURN_IF_ERROR(targets_->RefuseInputs(source_->inputs()));
  return targets_->CheckFits(source_->known_size(), source_->min_size());
}

// The bmap used and where the image comes from, as notes and in the report.
void WriteJob::NoteSource() {
  const ImageSource::Provenance& p = source_->provenance();
  if (!p.bmap.empty()) {
    report_.bmap = p.bmap;
    report_.bmap_found = p.bmap_found;
  }
  report_.bmap_signed_by = p.signed_by;
  if (report_.bmap_found) {
    bool used = source_->form().bmap;
    progress_->Note(used ? fmt::format("using block map {} (found beside the image; --no-bmap to write without it)",
                                       report_.bmap)
                         : fmt::format("ignoring block map {} found beside the image: the image is sparse", report_.bmap));
    if (!used) report_.bmap.clear();
  }
  if (!p.signed_by.empty()) progress_->Note(fmt::format("block map signed by {}: good signature", p.signed_by));
  if (std::optional<fetch::FetchReport> d = source_->download()) {
    std::string what = d->needed == d->size ? "the whole file" : "the block map's ranges";
    progress_->Note(fmt::format("{}: {} of {} needed ({}), cache {}{}", d->url, FormatBytes(d->needed),
                                FormatBytes(d->size), what, d->cache,
                                d->ranges ? "" : "; the server does not serve ranges: reading it whole"));
  }
}

void WriteJob::OnPhase(io::WritePhase phase, uint64_t done, uint64_t total) {
  if (phase == io::WritePhase::kSync) {
    progress_->Begin(Phase::kSyncing);
  } else if (done == 0) {
    synced_ = true;  // the writer only starts the read-back once every device is synced
    progress_->Begin(Phase::kVerifying, total);
  } else {
    progress_->Update(done, total);
  }
}

// From the commit point on: targets change.
Status WriteJob::Write() {
  std::optional<uint64_t> known = source_->known_size();
  FP_RETURN_IF_ERROR(targets_->Prepare(known));
  FP_ASSIGN_OR_RETURN(auto devices, targets_->MakeDevices(req_.backend, req_.writer.queue_depth));
  report_.backend = targets_->backend_name();
  for (size_t i = 0; req_.queue_hook && i < devices.size(); ++i) devices[i].queue = req_.queue_hook(i, devices[i].queue);
  io::WriterOptions wo = req_.writer;
  wo.cancel = req_.cancel;
  wo.progress = [&](uint64_t done, uint64_t total) { progress_->Update(done, std::max(total, known.value_or(0))); };
  wo.phase = [this](io::WritePhase p, uint64_t done, uint64_t total) { OnPhase(p, done, total); };
  FP_ASSIGN_OR_RETURN(writer_, io::ImageWriter::Create(std::move(devices), wo));
  if (req_.digest) {
    auto digest = ImageDigest::Start();
    if (digest.ok()) digest_ = std::move(*digest);  // without one the report says null
  }
  WriterSink writer_sink(writer_.get(), targets_->BlockCapacity());
  TapSink sink(&writer_sink, req_.cancel, digest_.get());
  progress_->Begin(Phase::kWriting, known.value_or(0));
  Status run = source_->Run(&sink);
  report_.stats = writer_->stats();
  if (!run.ok()) {
    failed_ = writer_->failed_device();
    return run;
  }
  report_.image_size = source_->image_size();
  Status fin = writer_->Finish();
  report_.stats = writer_->stats();
  if (!fin.ok()) {
    failed_ = writer_->failed_device();
    if (req_.writer.verify) report_.verify = fin.code() == Code::kMismatch ? VerifyOutcome::kFailed : VerifyOutcome::kNotRun;
    // A read-back failure on one device: those verified before it are done.
    if (synced_ && failed_) {
      std::vector<bool> complete(req_.targets.size());
      for (size_t i = 0; i < complete.size(); ++i) complete[i] = VerifyOf(i) == VerifyOutcome::kPassed;
      (void)targets_->Commit(*report_.image_size, complete);
    }
    return fin;
  }
  synced_ = verified_ = true;
  progress_->End();
  if (req_.writer.verify) report_.verify = VerifyOutcome::kPassed;
  return Complete();
}

// After the writer's Finish: the files go into place, then the digest.
Status WriteJob::Complete() {
  FP_RETURN_IF_ERROR(CheckCancel(req_.cancel));  // an interrupt before the renames: none of them
  FP_RETURN_IF_ERROR(targets_->Commit(*report_.image_size));
  if (digest_) FinishDigest();
  return Status::Ok();
}

// The digest thread may still be hashing (zeros cost it as much as data,
// the device nothing): what the run waited for it is in the report, and a
// wait that matters is said, never a silent slowdown.
void WriteJob::FinishDigest() {
  report_.image_sha256 = digest_->Finish(*report_.image_size);
  double waited = digest_->waited();
  report_.phases.digest = waited;
  if (digest_->bytes_per_second() > 0) report_.digest_mib_per_s = digest_->bytes_per_second() / (1 << 20);
  if (waited >= 0.2) {
    progress_->Note(fmt::format("waited {:.1f} s for the image's SHA-256 (hashing at {:.0f} MiB/s, zeros included, "
                                "is slower than this target; --no-digest skips it)",
                                waited, report_.digest_mib_per_s.value_or(0)));
  }
}

// Devices are read back in order and the first bad one stops the read-back.
VerifyOutcome WriteJob::VerifyOf(size_t target) const {
  if (!req_.writer.verify || !synced_) return VerifyOutcome::kNotRun;
  if (verified_) return VerifyOutcome::kPassed;
  if (!failed_ || target > *failed_) return VerifyOutcome::kNotRun;
  if (target < *failed_) return VerifyOutcome::kPassed;
  return report_.verify == VerifyOutcome::kFailed ? VerifyOutcome::kFailed : VerifyOutcome::kNotRun;
}

TargetResult WriteJob::ResultOf(size_t index, const WriteTargets::Info& info, const Status& run) const {
  TargetResult t{.path = info.path, .kind = info.kind, .in_place = info.in_place, .verify = VerifyOf(index),
                 .partition = info.partition, .window = info.window};
  bool bad_readback = t.verify == VerifyOutcome::kFailed;
  uint64_t changed = report_.stats.changed_end;
  if (info.committed) t.state = TargetState::kWritten;
  else if (!info.prepared) t.state = TargetState::kNotStarted;
  else if (!info.in_place) t.state = TargetState::kUnchanged;
  else if (synced_ && !bad_readback && failed_ != index) t.state = TargetState::kWritten;
  else if (changed == 0 && !info.truncated) t.state = TargetState::kUnchanged;
  else t.state = TargetState::kPartial;
  if (t.state == TargetState::kPartial) t.partly_written_to = changed;
  t.old_contents_discarded = info.truncated;
  t.ok = t.state == TargetState::kWritten && (!req_.writer.verify || t.verify == VerifyOutcome::kPassed);
  if (t.ok) return t;
  t.status = info.status;
  if (t.status.ok() && failed_ && *failed_ != index) {
    t.stopped_by_other = true;
    t.status = Cancelled(fmt::format("stopped: {} failed", req_.targets[*failed_]));
  }
  if (t.status.ok()) t.status = run.ok() ? Internal("not completed") : run;
  return t;
}

void WriteJob::Conclude(Status status) {
  if (source_) report_.download = source_->download();
  if (!status.ok() && req_.cancel != nullptr && req_.cancel->cancelled()) {
    report_.signal = req_.cancel->signal();
    status = req_.cancel->Check();  // what failed after the signal (a pipe closed by it) is its consequence
  }
  if (!status.ok() && report_.bmap_found && status.code() == Code::kCorrupt && !report_.bmap.empty()) {
    status = status.WithContext(fmt::format("block map {} (found beside the image; if it belongs to another image, "
                                            "write with --no-bmap)", report_.bmap));
  }
  std::vector<std::string> partial, cut;  // changed in place; in-place files (cut first)
  if (targets_) {
    // A failure the checks found on one target stops the others too.
    if (!failed_) {
      auto infos = targets_->Describe();
      for (size_t i = 0; i < infos.size() && !failed_; ++i)
        if (!infos[i].status.ok()) failed_ = i;
    }
    auto infos = targets_->Describe();
    for (size_t i = 0; i < infos.size(); ++i) {
      const TargetResult& t = report_.results.emplace_back(ResultOf(i, infos[i], status));
      if (t.state == TargetState::kPartial) (t.old_contents_discarded ? cut : partial).push_back(t.path);
    }
  }
  if ((!partial.empty() || !cut.empty()) && !status.ok()) {
    uint64_t end = report_.stats.changed_end;
    report_.partly_written_to = end;
    std::string what = status.ToString();
    if (!partial.empty()) {
      what += fmt::format("; {} partly written: image bytes before 0x{:x} ({}) may have changed, none after them",
                          Join(partial), end, FormatBytes(end));
    }
    if (!cut.empty()) {
      what += fmt::format("; {} partly written: cut to the image's size first, the old contents are gone; image "
                          "bytes before 0x{:x} ({}) may have been written", Join(cut), end, FormatBytes(end));
    }
    status = Status(status.code(), what);
  }
  report_.status = status;
}

// --verify-only: each target read and compared in turn.
class CompareJob {
 public:
  CompareJob(const WriteRequest& req, Progress* progress, WriteReport* report)
      : req_(req), progress_(progress), report_(*report) {}

  Status Run() {
    if (req_.image == "-" && req_.targets.size() > 1) {
      return InvalidArgument("--verify-only reads stdin once: give one target");
    }
    for (; done_ < req_.targets.size(); ++done_) FP_RETURN_IF_ERROR(CompareOne(req_.targets[done_]));
    report_.verify = VerifyOutcome::kPassed;
    return Status::Ok();
  }
  void Conclude(Status status);

 private:
  Status CompareOne(const std::string& path) {
    FP_ASSIGN_OR_RETURN(auto source, OpenImage(req_.image, req_.source));
    report_.kind = source->kind();
    io::TargetSpec spec = io::ParseTargetSpec(path);
    FP_ASSIGN_OR_RETURN(auto target, io::Target::Open(spec.path, {.read_only = true}));
    kinds_.push_back(target->geometry().block_device ? TargetKind::kBlockDevice : TargetKind::kFile);
    std::string what = path;
    if (io::IsWindowed(spec, req_.window)) {
      FP_ASSIGN_OR_RETURN(io::TargetWindow w, io::SetWriteWindow(spec, req_.window, target.get()));
      windows_.resize(done_ + 1);
      windows_[done_] = {spec.partition, w.range};
      what = w.what;
    }
    CompareSink compare(target.get());
    TapSink sink(&compare, req_.cancel, nullptr);
    std::optional<uint64_t> known = source->known_size();
    report_.image_size = known;
    FP_RETURN_IF_ERROR(CheckFits(known.value_or(source->min_size()), target->window_size(), what, !known));
    progress_->Begin(Phase::kVerifying, known.value_or(0));
    Status s = source->Run(&sink);
    report_.image_size = source->image_size();
    report_.stats.bytes_skipped = compare.bytes_skipped();
    if (!s.ok()) {
      report_.verify = s.code() == Code::kMismatch ? VerifyOutcome::kFailed : VerifyOutcome::kNotRun;
      return s;
    }
    progress_->Update(compare.bytes_compared(), compare.bytes_compared());
    progress_->End();
    return Status::Ok();
  }

  const WriteRequest& req_;
  Progress* progress_;
  WriteReport& report_;
  size_t done_ = 0;  // targets that matched
  std::vector<TargetKind> kinds_;
  std::vector<std::pair<std::string, std::optional<io::ByteRange>>> windows_;  // partition, window
};

void CompareJob::Conclude(Status status) {
  if (!status.ok() && req_.cancel != nullptr && req_.cancel->cancelled()) {
    report_.signal = req_.cancel->signal();
    status = req_.cancel->Check();
  }
  for (size_t i = 0; i < req_.targets.size(); ++i) {
    TargetResult t{.path = req_.targets[i], .state = TargetState::kUnchanged};
    if (i < kinds_.size()) t.kind = kinds_[i];
    if (i < windows_.size()) std::tie(t.partition, t.window) = windows_[i];
    t.ok = i < done_;
    t.verify = t.ok ? VerifyOutcome::kPassed : i == done_ ? report_.verify : VerifyOutcome::kNotRun;
    if (i == done_) t.status = status;
    if (i > done_) {
      t.stopped_by_other = report_.signal == 0;
      t.status = t.stopped_by_other ? Cancelled(fmt::format("stopped: {} failed", req_.targets[done_])) : status;
    }
    report_.results.push_back(std::move(t));
  }
  report_.status = status;
}

WriteReport Start(const WriteRequest& req) {
  WriteReport r;
  r.image = req.image;
  r.targets = req.targets;
  r.bmap = req.source.bmap_path;
  r.bmap_found = req.source.bmap_found;
  r.verify_asked = req.writer.verify;
  return r;
}

void Finish(WriteReport& r, Progress* progress, std::chrono::steady_clock::time_point t0) {
  progress->Stop();  // a phase the run left unfinished
  r.seconds = Since(t0);
  r.phases = {progress->seconds(Phase::kWriting), progress->seconds(Phase::kSyncing),
              progress->seconds(Phase::kVerifying), r.phases.digest};
}

}  // namespace

WriteReport RunWriteJob(const WriteRequest& request, Progress* progress) {
  auto t0 = std::chrono::steady_clock::now();
  WriteRequest req = WithBmap(request);
  WriteReport r = Start(req);
  Status s = CheckOtherOutputs(req, &r);
  WriteJob job(req, progress, &r);
  if (s.ok()) s = job.Run();
  job.Conclude(s);
  Finish(r, progress, t0);
  return r;
}

WriteReport VerifyOnly(const WriteRequest& request, Progress* progress) {
  auto t0 = std::chrono::steady_clock::now();
  WriteRequest req = WithBmap(request);
  WriteReport r = Start(req);
  r.verify_only = r.verify_asked = true;
  Status s = CheckOtherOutputs(req, &r);
  CompareJob job(req, progress, &r);
  if (s.ok()) s = job.Run();
  job.Conclude(s);
  Finish(r, progress, t0);
  return r;
}

}  // namespace flashpipe::input
