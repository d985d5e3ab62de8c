#include "output/bmap_job.h"

#include <chrono>
#include <cstdlib>

#include "base/fd_io.h"
#include "base/json.h"
#include "io/image_reader.h"
#include "output/bmap_writer.h"
#include "output/output_file.h"
#include "output/read_source.h"

namespace flashpipe::output {
namespace {

// A bmap is patched after it is written: a stream gets it from a temp file.
Status CopyOut(int from, const OutputFile& to) {
  std::vector<uint8_t> buf(1 << 20);
  for (uint64_t at = 0;;) {
    FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(from, buf, at, "the bmap's temporary file"));
    if (n == 0) return Status::Ok();
    FP_RETURN_IF_ERROR(WriteAll(to.fd(), {buf.data(), n}, to.name(), at));
    at += n;
  }
}

Status Create(const BmapRequest& req, input::Progress* progress, const std::function<void(const std::string&)>& warn,
              BmapReport* report) {
  FP_ASSIGN_OR_RETURN(ReadSource src, OpenSource({.spec = req.image, .force = req.force}));
  report->image_size = src.length;
  for (const std::string& w : src.warnings) {
    if (warn) warn(w);
  }
  FP_ASSIGN_OR_RETURN(OutputFile out, OutputFile::Check(req.output, src.id, "bmap", /*text=*/true));
  FP_RETURN_IF_ERROR(out.Open());
  UniqueFd temp;
  if (!out.regular()) {
    const char* dir = std::getenv("TMPDIR");
    FP_ASSIGN_OR_RETURN(temp, AnonymousFileBeside(std::string(dir && *dir ? dir : "/tmp") + "/bmap"));
  }
  int fd = temp.valid() ? temp.get() : out.fd();
  BmapOptions o{.map_read_zeros = !req.zeros_unmapped && !src.block_device};
  FP_ASSIGN_OR_RETURN(auto bmap, BmapWriter::Create(fd, out.name(), src.length, o));
  FP_ASSIGN_OR_RETURN(auto queue, src.target->MakeQueue(req.queue.backend, req.queue.queue_depth));
  report->backend = std::string(queue->name());
  FP_ASSIGN_OR_RETURN(auto reader, io::ImageReader::Create(*src.target, queue.get(), 0, src.length,
                                                           {.request_size = req.queue.request_size}));
  if (progress) progress->Begin(input::Phase::kReading, src.length);
  auto on_progress = [&](uint64_t done) {
    if (progress) progress->Update(done, src.length);
  };
  FP_ASSIGN_OR_RETURN(report->scan, Pump(*reader, 0, src.length, *bmap, on_progress));
  if (progress) progress->End();
  report->blocks = bmap->blocks_count();
  report->mapped_blocks = bmap->mapped_blocks();
  report->ranges = bmap->ranges();
  if (temp.valid()) FP_RETURN_IF_ERROR(CopyOut(temp.get(), out));
  FP_RETURN_IF_ERROR(out.Commit());
  return Status::Ok();
}

}  // namespace

BmapReport RunBmapCreate(const BmapRequest& request, input::Progress* progress,
                         const std::function<void(const std::string&)>& warn) {
  auto t0 = std::chrono::steady_clock::now();
  BmapReport r;
  r.image = request.image;
  r.output = request.output;
  r.status = Create(request, progress, warn, &r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string BmapReportJson(const BmapReport& r) {
  return fmt::format(
      "{{{}, \"ok\": {}, \"image\": {}, \"bmap\": {}, \"backend\": {}, \"image_size\": {}, \"blocks\": {}, "
      "\"mapped_blocks\": {}, \"ranges\": {}, \"data_bytes\": {}, \"zero_bytes\": {}, \"hole_bytes\": {}, "
      "\"seconds\": {:.3f}, \"error\": {}}}",
      JsonSchemaMembers("bmap-create", 1), r.status.ok(), JsonString(r.image), JsonString(r.output), JsonString(r.backend), r.image_size, r.blocks,
      r.mapped_blocks, r.ranges, r.scan.data_bytes, r.scan.zero_bytes, r.scan.hole_bytes, r.seconds,
      r.status.ok() ? "null" : JsonString(r.status.ToString()));
}

}  // namespace flashpipe::output
