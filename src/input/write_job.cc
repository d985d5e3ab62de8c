#include "input/write_job.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "input/compare_sink.h"

namespace flashpipe::input {
namespace {

// The window of a regular-file target while a stream's size is unknown; the
// file is cut to the real size at the end.
constexpr uint64_t kStreamWindow = uint64_t{1} << 50;

struct OpenedTarget {
  std::unique_ptr<io::Target> target;
  std::unique_ptr<io::IoQueue> queue;
  bool size_unknown = false;  // regular file, cut to size at the end
};

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Writing onto the image itself, or twice onto one target, is refused.
Status RefuseAliases(const std::string& image, const std::vector<std::string>& targets) {
  std::vector<std::pair<dev_t, ino_t>> seen;
  struct stat st;
  if (image != "-" && ::stat(image.c_str(), &st) == 0) seen.emplace_back(st.st_dev, st.st_ino);
  for (const std::string& t : targets) {
    if (::stat(t.c_str(), &st) != 0) continue;
    std::pair<dev_t, ino_t> id(S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev, st.st_ino);
    for (size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] == id) {
        return InvalidArgument(i == 0 && image != "-" ? fmt::format("target {} is the image itself", t)
                                                      : fmt::format("target {} is given twice", t));
      }
    }
    seen.push_back(id);
  }
  return Status::Ok();
}

// Opened in the first pass: block devices, and missing paths under /dev
// (refused by Target::Open before any file is truncated).
bool OpenFirst(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return S_ISBLK(st.st_mode);
  return path.starts_with("/dev/");
}

// Block devices first (opened, size checked), then regular files (created,
// truncated): a refusal leaves every target untouched.
Result<std::vector<OpenedTarget>> OpenTargets(const WriteRequest& req, std::optional<uint64_t> known) {
  std::vector<OpenedTarget> out(req.targets.size());
  for (size_t pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < req.targets.size(); ++i) {
      const std::string& path = req.targets[i];
      bool blk = OpenFirst(path);
      if (blk != (pass == 0)) continue;
      io::TargetOptions o{.force = req.force, .create = true};
      if (!blk && known && *known > 0) o.truncate_to = *known;
      FP_ASSIGN_OR_RETURN(out[i].target, io::Target::Open(path, o));
      if (blk && known) FP_RETURN_IF_ERROR(CheckFits(*known, out[i].target->window_size(), path));
      if (!blk && !o.truncate_to) {
        if (::ftruncate(out[i].target->fd(), 0) != 0) return ErrnoError(fmt::format("{}: truncate", path));
        out[i].size_unknown = true;
      }
    }
  }
  return out;
}

Result<std::vector<io::Device>> MakeDevices(std::vector<OpenedTarget>& targets, const WriteRequest& req) {
  std::vector<io::Device> devices;
  for (OpenedTarget& t : targets) {
    FP_ASSIGN_OR_RETURN(t.queue, t.target->MakeQueue(req.backend, req.writer.queue_depth));
    io::Device d = io::DeviceFor(*t.target, t.queue.get());
    if (t.size_unknown) {
      d.geometry.size = kStreamWindow;
      d.window_size = kStreamWindow;
      d.reads_zero = true;
    }
    devices.push_back(d);
  }
  return devices;
}

uint64_t BlockCapacity(const std::vector<OpenedTarget>& targets) {
  uint64_t cap = 0;
  for (const OpenedTarget& t : targets) {
    if (t.target->geometry().block_device) cap = cap ? std::min(cap, t.target->window_size()) : t.target->window_size();
  }
  return cap;
}

Status CutToSize(const std::vector<OpenedTarget>& targets, uint64_t size) {
  for (const OpenedTarget& t : targets) {
    if (!t.size_unknown) continue;
    if (::ftruncate(t.target->fd(), static_cast<off_t>(size)) != 0 || ::fdatasync(t.target->fd()) != 0) {
      return ErrnoError(fmt::format("{}: cannot set size to {}", t.target->path(), size));
    }
  }
  return Status::Ok();
}

Status Write(const WriteRequest& req, Progress* progress, WriteReport* report) {
  FP_RETURN_IF_ERROR(RefuseAliases(req.image, req.targets));
  FP_ASSIGN_OR_RETURN(auto source, OpenImage(req.image, req.source));
  report->kind = source->kind();
  std::optional<uint64_t> known = source->known_size();
  FP_ASSIGN_OR_RETURN(auto targets, OpenTargets(req, known));
  FP_ASSIGN_OR_RETURN(auto devices, MakeDevices(targets, req));
  report->backend = std::string(targets.front().queue->name());
  io::WriterOptions wo = req.writer;
  wo.progress = [&](uint64_t done, uint64_t total) { progress->Update(done, std::max(total, known.value_or(0))); };
  FP_ASSIGN_OR_RETURN(auto writer, io::ImageWriter::Create(std::move(devices), wo));
  WriterSink sink(writer.get(), BlockCapacity(targets));
  Status run = source->Run(&sink);
  report->image_size = source->image_size();
  report->stats = writer->stats();
  if (!run.ok()) return run;
  Status fin = writer->Finish();
  report->stats = writer->stats();
  if (req.writer.verify) report->verify = fin.ok() ? "passed" : fin.code() == Code::kCorrupt ? "failed" : "not run";
  FP_RETURN_IF_ERROR(fin);
  progress->Done(report->image_size, report->image_size);
  return CutToSize(targets, report->image_size);
}

Status Compare(const WriteRequest& req, Progress* progress, WriteReport* report) {
  if (req.image == "-" && req.targets.size() > 1) {
    return InvalidArgument("--verify-only reads stdin once: give one target");
  }
  for (const std::string& path : req.targets) {
    FP_ASSIGN_OR_RETURN(auto source, OpenImage(req.image, req.source));
    report->kind = source->kind();
    FP_ASSIGN_OR_RETURN(auto target, io::Target::Open(path, {.read_only = true}));
    CompareSink sink(target.get());
    if (auto known = source->known_size()) FP_RETURN_IF_ERROR(CheckFits(*known, target->window_size(), path));
    Status s = source->Run(&sink);
    report->image_size = source->image_size();
    report->stats.bytes_skipped = sink.bytes_skipped();
    if (!s.ok()) {
      report->verify = s.code() == Code::kCorrupt && s.message().find("differs") != std::string::npos ? "failed" : "not run";
      return s;
    }
    progress->Done(sink.bytes_compared(), sink.bytes_compared());
  }
  report->verify = "passed";
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

static std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string ReportJson(const WriteReport& r) {
  std::string targets;
  for (const auto& t : r.targets) targets += (targets.empty() ? "" : ", ") + JsonString(t);
  double mib_s = r.seconds > 0 ? static_cast<double>(r.image_size) / r.seconds / (1 << 20) : 0;
  return fmt::format(
      "{{\"ok\": {}, \"image\": {}, \"kind\": {}, \"targets\": [{}], \"backend\": {}, \"image_size\": {}, "
      "\"bytes_written\": {}, \"bytes_zeroed\": {}, \"bytes_discarded\": {}, \"bytes_skipped\": {}, "
      "\"requests\": {}, \"seconds\": {:.3f}, \"mib_per_s\": {:.1f}, \"verify\": {}, \"error\": {}}}",
      r.status.ok(), JsonString(r.image), JsonString(r.kind), targets, JsonString(r.backend), r.image_size,
      r.stats.bytes_written, r.stats.bytes_zeroed, r.stats.bytes_discarded, r.stats.bytes_skipped, r.stats.requests,
      r.seconds, mib_s, JsonString(r.verify), r.status.ok() ? "null" : JsonString(r.status.ToString()));
}

}  // namespace flashpipe::input
