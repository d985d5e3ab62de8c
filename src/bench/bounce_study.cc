#include "bench/bounce_study.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "base/unique_fd.h"
#include "io/bounce_writer.h"
#include "sparse/decode_fd.h"

namespace flashpipe::bench {
namespace {

// Counts what the image holds; writes nothing.
class SummarySink : public sparse::Sink {
 public:
  explicit SummarySink(ImageSummary* s) : s_(s) {}
  Status OnHeader(const sparse::FileHeader& h) override {
    s_->image_size += h.image_size();
    blk_sz_ = h.blk_sz;
    return Status::Ok();
  }
  Status OnRaw(uint64_t, std::span<const uint8_t> data) override {
    s_->raw_bytes += data.size();
    return Status::Ok();
  }
  Status OnFill(uint64_t, uint64_t length, uint32_t pattern) override {
    s_->fill_bytes += length;
    if (pattern == 0) s_->zero_fill_bytes += length;
    return Status::Ok();
  }
  Status OnSkip(uint64_t, uint64_t length) override {
    s_->skip_bytes += length;
    return Status::Ok();
  }
  Status OnChunk(const sparse::ChunkInfo& c) override {
    s_->chunks++;
    if (c.type == sparse::kChunkRaw) s_->largest_raw = std::max<uint64_t>(s_->largest_raw, uint64_t{c.blocks} * blk_sz_);
    return Status::Ok();
  }

 private:
  ImageSummary* s_;
  uint32_t blk_sz_ = 4096;
};

Result<UniqueFd> OpenImage(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open sparse image " + path);
  return UniqueFd(fd);
}

uint64_t DataBytes(const ImageSummary& s) { return s.raw_bytes + s.fill_bytes; }

}  // namespace

Result<ImageSummary> SummarizeSparse(const std::string& path) {
  FP_ASSIGN_OR_RETURN(UniqueFd fd, OpenImage(path));
  ImageSummary s;
  SummarySink sink(&s);
  FP_RETURN_IF_ERROR(sparse::DecodeFd(fd.get(), sink, {}, path).WithContext(path));
  return s;
}

Result<std::vector<StudyVariant>> ParseBufferBlocks(std::string_view text) {
  std::vector<StudyVariant> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    StudyVariant v;
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item == "chunk") v.chunk = true;
    else if (ec == std::errc() && p == item.data() + item.size() && n > 0) v.buffer_blocks = n;
    else return InvalidArgument(fmt::format("--buffer-blocks: '{}' is not a block count or 'chunk'", item));
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (out.empty()) return InvalidArgument("--buffer-blocks: empty list");
  return out;
}

std::string VariantLabel(const StudyVariant& v) {
  if (v.pipelined) return "pipelined";
  if (v.chunk) return "buffer = chunk";
  return fmt::format("buffer {} blocks", v.buffer_blocks);
}

std::string FormatStudyLine(const StudyResult& r, uint64_t fastest_ns) {
  const double s = double(r.ns) / 1e9;
  const double mbps = r.ns ? double(r.data_bytes) / s / 1e6 : 0;
  std::string ratio = r.ns <= fastest_ns ? "fastest"
                                         : fmt::format("{:.2f}x the fastest", double(r.ns) / double(fastest_ns));
  std::string line = fmt::format("{}: {:.3f} s, {:.1f} MB/s ({})", VariantLabel(r.variant), s, mbps, ratio);
  if (r.device_ns > 0) {
    line += fmt::format("; device busy {:.3f} s, {} requests", double(r.device_ns) / 1e9, r.requests);
  }
  return line;
}

Result<std::unique_ptr<io::WriteSink>> MakeVariantSink(const StudyVariant& v, const ImageSummary& summary,
                                                       const io::Device& device,
                                                       const io::WriterOptions& options) {
  if (v.pipelined) {
    FP_ASSIGN_OR_RETURN(auto writer, io::ImageWriter::Create({device}, options));
    return std::unique_ptr<io::WriteSink>(std::move(writer));
  }
  const uint64_t lbs = device.geometry.logical_block;
  const uint64_t bytes = v.chunk ? std::max<uint64_t>((summary.largest_raw + lbs - 1) / lbs * lbs, lbs)
                                 : v.buffer_blocks * lbs;
  FP_ASSIGN_OR_RETURN(auto writer, io::BounceWriter::Create(device, {.buffer_bytes = bytes}));
  return std::unique_ptr<io::WriteSink>(std::move(writer));
}

namespace {

// Events on to `inner` until `cancel` is set (the bounce model has no flag of its own).
class CancelSink : public sparse::Sink {
 public:
  CancelSink(sparse::Sink* inner, const CancelFlag* cancel) : inner_(inner), cancel_(cancel) {}
  Status OnHeader(const sparse::FileHeader& h) override { return Check() ? inner_->OnHeader(h) : Stop(); }
  Status OnRaw(uint64_t o, std::span<const uint8_t> d) override { return Check() ? inner_->OnRaw(o, d) : Stop(); }
  Status OnFill(uint64_t o, uint64_t n, uint32_t p) override { return Check() ? inner_->OnFill(o, n, p) : Stop(); }
  Status OnSkip(uint64_t o, uint64_t n) override { return Check() ? inner_->OnSkip(o, n) : Stop(); }
  Status OnEnd() override { return Check() ? inner_->OnEnd() : Stop(); }

 private:
  bool Check() const { return cancel_ == nullptr || !cancel_->cancelled(); }
  Status Stop() const { return cancel_->Check(); }
  sparse::Sink* inner_;
  const CancelFlag* cancel_;
};

}  // namespace

Result<StudyResult> RunVariant(const std::string& image, const ImageSummary& summary, const StudyVariant& v,
                               const io::Device& device, const io::WriterOptions& options, Clock& clock) {
  FP_ASSIGN_OR_RETURN(UniqueFd fd, OpenImage(image));
  FP_ASSIGN_OR_RETURN(auto sink, MakeVariantSink(v, summary, device, options));
  CancelSink events(sink.get(), options.cancel);
  const uint64_t start = clock.Now();
  FP_RETURN_IF_ERROR(sparse::DecodeFd(fd.get(), events, {}, image).WithContext(VariantLabel(v)));
  FP_RETURN_IF_ERROR(sink->Finish().WithContext(VariantLabel(v)));
  return StudyResult{v, clock.Now() - start, DataBytes(summary), sink->stats().requests};
}

}  // namespace flashpipe::bench
