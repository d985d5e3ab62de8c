#include "bench/bounce.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/unique_fd.h"
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

BounceWriter::BounceWriter(io::IoQueue* queue, uint64_t base_offset, uint64_t buffer_bytes, size_t mem_align)
    : queue_(queue), base_offset_(base_offset), capacity_(buffer_bytes), buffer_(buffer_bytes, mem_align) {}

Status BounceWriter::WriteBlocking(uint64_t image_offset, const uint8_t* buf, uint64_t length) {
  io::IoOp op;
  op.kind = io::OpKind::kWrite;
  op.offset = base_offset_ + image_offset;
  op.length = length;
  op.buf = const_cast<uint8_t*>(buf);
  FP_RETURN_IF_ERROR(queue_->Submit(op));
  FP_ASSIGN_OR_RETURN(io::IoCompletion c, queue_->Wait());
  FP_RETURN_IF_ERROR(c.status);
  writes_++;
  bytes_written_ += length;
  return Status::Ok();
}

Status BounceWriter::Flush() {
  if (buffered_ == 0) return Status::Ok();
  FP_RETURN_IF_ERROR(WriteBlocking(buffer_offset_, buffer_.data(), buffered_));
  buffer_offset_ += buffered_;
  buffered_ = 0;
  return Status::Ok();
}

Status BounceWriter::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  if (buffered_ > 0 && offset != buffer_offset_ + buffered_) FP_RETURN_IF_ERROR(Flush());
  if (buffered_ == 0) buffer_offset_ = offset;
  while (!data.empty()) {
    const uint64_t n = std::min<uint64_t>(data.size(), capacity_ - buffered_);
    std::memcpy(buffer_.data() + buffered_, data.data(), n);
    buffered_ += n;
    data = data.subspan(n);
    if (buffered_ == capacity_) FP_RETURN_IF_ERROR(Flush());
  }
  return Status::Ok();
}

Status BounceWriter::OnChunk(const sparse::ChunkInfo& chunk) {
  return chunk.type == sparse::kChunkRaw ? Flush() : Status::Ok();
}

Status BounceWriter::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  FP_RETURN_IF_ERROR(Flush());
  const uint64_t fill = std::min<uint64_t>(length, capacity_);
  for (uint64_t i = 0; i + 4 <= fill; i += 4) std::memcpy(buffer_.data() + i, &pattern, 4);
  for (uint64_t done = 0; done < length;) {
    const uint64_t n = std::min(fill, length - done);
    FP_RETURN_IF_ERROR(WriteBlocking(offset + done, buffer_.data(), n));
    done += n;
  }
  return Status::Ok();
}

Status BounceWriter::OnSkip(uint64_t, uint64_t) { return Flush(); }

Status BounceWriter::Finish() {
  FP_RETURN_IF_ERROR(Flush());
  return queue_->Sync();
}

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

Result<StudyResult> RunBounce(const std::string& image, const ImageSummary& summary, const StudyVariant& v,
                              io::IoQueue* queue, Clock& clock, uint64_t base_offset, uint32_t lbs,
                              size_t mem_align) {
  const uint64_t bytes = v.chunk ? std::max<uint64_t>(summary.largest_raw, lbs) : v.buffer_blocks * lbs;
  BounceWriter writer(queue, base_offset, bytes, mem_align);
  FP_ASSIGN_OR_RETURN(UniqueFd fd, OpenImage(image));
  const uint64_t start = clock.Now();
  FP_RETURN_IF_ERROR(sparse::DecodeFd(fd.get(), writer, {}, image).WithContext(VariantLabel(v)));
  FP_RETURN_IF_ERROR(writer.Finish().WithContext(VariantLabel(v)));
  return StudyResult{v, clock.Now() - start, DataBytes(summary), writer.writes()};
}

Result<StudyResult> RunPipelined(const std::string& image, const ImageSummary& summary,
                                 const io::Device& device, const io::WriterOptions& options, Clock& clock) {
  FP_ASSIGN_OR_RETURN(UniqueFd fd, OpenImage(image));
  // Buffers are allocated before the clock starts, as for the bounce variants.
  FP_ASSIGN_OR_RETURN(auto writer, io::ImageWriter::Create({device}, options));
  const uint64_t start = clock.Now();
  FP_RETURN_IF_ERROR(sparse::DecodeFd(fd.get(), *writer, {}, image).WithContext("pipelined"));
  FP_RETURN_IF_ERROR(writer->Finish().WithContext("pipelined"));
  StudyVariant v;
  v.pipelined = true;
  return StudyResult{v, clock.Now() - start, DataBytes(summary), writer->stats().requests};
}

}  // namespace flashpipe::bench
