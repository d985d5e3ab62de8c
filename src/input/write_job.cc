#include "input/write_job.h"

#include <chrono>

#include "base/units.h"
#include "input/compare_sink.h"
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

// A failure after targets were changed in place says so, and how far.
Status PartlyWritten(const Status& s, const WriteTargets& targets, WriteReport* report) {
  std::vector<std::string> names = targets.in_place_names();
  uint64_t end = report->stats.changed_end;
  if (names.empty() || (end == 0 && !targets.truncated_in_place())) return s;
  report->partly_written_to = end;
  return Status(s.code(), fmt::format("{}; {} partly written: image bytes before 0x{:x} ({}) may have changed, "
                                      "none after them", s.ToString(), Join(names), end, FormatBytes(end)));
}

// From the commit point on: targets change.
Status WriteAll(const WriteRequest& req, ImageSource& source, WriteTargets& targets, Progress* progress,
                WriteReport* report) {
  std::optional<uint64_t> known = source.known_size();
  FP_RETURN_IF_ERROR(targets.Prepare(known));
  FP_ASSIGN_OR_RETURN(auto devices, targets.MakeDevices(req.backend, req.writer.queue_depth));
  report->backend = targets.backend_name();
  io::WriterOptions wo = req.writer;
  wo.progress = [&](uint64_t done, uint64_t total) { progress->Update(done, std::max(total, known.value_or(0))); };
  FP_ASSIGN_OR_RETURN(auto writer, io::ImageWriter::Create(std::move(devices), wo));
  WriterSink sink(writer.get(), targets.BlockCapacity());
  Status run = source.Run(&sink);
  report->image_size = source.image_size();
  report->stats = writer->stats();
  if (!run.ok()) return run;
  Status fin = writer->Finish();
  report->stats = writer->stats();
  if (req.writer.verify) {
    report->verify = fin.ok() ? VerifyOutcome::kPassed
                     : fin.code() == Code::kMismatch ? VerifyOutcome::kFailed : VerifyOutcome::kNotRun;
  }
  FP_RETURN_IF_ERROR(fin);
  FP_RETURN_IF_ERROR(targets.Commit(report->image_size));
  progress->Done(report->image_size, report->image_size);
  return Status::Ok();
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

Status Write(const WriteRequest& req, Progress* progress, WriteReport* report) {
  FP_RETURN_IF_ERROR(CheckOtherOutputs(req, report));
  FP_ASSIGN_OR_RETURN(WriteTargets targets, WriteTargets::Check(req.targets, {req.force, req.in_place}));
  FP_ASSIGN_OR_RETURN(auto source, OpenImage(req.image, req.source));
  report->kind = source->kind();
  FP_RETURN_IF_ERROR(targets.RefuseInputs(source->inputs()));
  FP_RETURN_IF_ERROR(targets.CheckFits(source->known_size(), source->min_size()));
  Status s = WriteAll(req, *source, targets, progress, report);
  return s.ok() ? s : PartlyWritten(s, targets, report);
}

Status Compare(const WriteRequest& req, Progress* progress, WriteReport* report) {
  FP_RETURN_IF_ERROR(CheckOtherOutputs(req, report));
  if (req.image == "-" && req.targets.size() > 1) {
    return InvalidArgument("--verify-only reads stdin once: give one target");
  }
  for (const std::string& path : req.targets) {
    FP_ASSIGN_OR_RETURN(auto source, OpenImage(req.image, req.source));
    report->kind = source->kind();
    FP_ASSIGN_OR_RETURN(auto target, io::Target::Open(path, {.read_only = true}));
    CompareSink sink(target.get());
    std::optional<uint64_t> known = source->known_size();
    FP_RETURN_IF_ERROR(CheckFits(known.value_or(source->min_size()), target->window_size(), path, !known));
    Status s = source->Run(&sink);
    report->image_size = source->image_size();
    report->stats.bytes_skipped = sink.bytes_skipped();
    if (!s.ok()) {
      report->verify = s.code() == Code::kMismatch ? VerifyOutcome::kFailed : VerifyOutcome::kNotRun;
      return s;
    }
    progress->Done(sink.bytes_compared(), sink.bytes_compared());
  }
  report->verify = VerifyOutcome::kPassed;
  return Status::Ok();
}

WriteReport Start(const WriteRequest& req) {
  WriteReport r;
  r.image = req.image;
  r.targets = req.targets;
  return r;
}

}  // namespace

WriteReport RunWriteJob(const WriteRequest& request, Progress* progress) {
  auto t0 = std::chrono::steady_clock::now();
  WriteReport r = Start(request);
  r.status = Write(request, progress, &r);
  r.seconds = Since(t0);
  return r;
}

WriteReport VerifyOnly(const WriteRequest& request, Progress* progress) {
  auto t0 = std::chrono::steady_clock::now();
  WriteReport r = Start(request);
  r.status = Compare(request, progress, &r);
  r.seconds = Since(t0);
  return r;
}

}  // namespace flashpipe::input
