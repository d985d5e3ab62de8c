#include "sparse/resparse.h"

#include <unistd.h>

#include "sparse/decode_fd.h"

namespace flashpipe::sparse {
namespace {

// Builds parts extent by extent, keeping the serialized size of each.
class Planner {
 public:
  Planner(uint32_t blk_sz, uint32_t total_blks, uint64_t max_size)
      : blk_(blk_sz), total_blks_(total_blks), max_(max_size) {}

  Status Add(Extent e) {
    while (e.blocks > 0) {
      uint64_t fixed = GapCost(e.block) + kChunkHeaderSize + kChunkHeaderSize;  // gap, chunk, tail DONT_CARE
      uint64_t payload = e.type == kChunkRaw ? uint64_t{e.blocks} * blk_ : 4;
      if (cur_.bytes + fixed + payload <= max_) {
        Append(e, fixed - kChunkHeaderSize + payload);
        return Status::Ok();
      }
      uint64_t room = max_ - std::min(max_, cur_.bytes + fixed);
      bool empty = cur_.extents.empty();
      if (e.type == kChunkRaw && room >= blk_ && (empty || room > max_ / 8)) {
        Extent head = e;
        head.blocks = static_cast<uint32_t>(room / blk_);
        Append(head, fixed - kChunkHeaderSize + uint64_t{head.blocks} * blk_);
        e.block += head.blocks;
        e.blocks -= head.blocks;
        e.input_offset += uint64_t{head.blocks} * blk_;
      } else if (empty) {
        return InvalidArgument(fmt::format("max size {} cannot hold one {}-byte block with its headers (needs {})",
                                           max_, blk_, fixed + blk_ + kFileHeaderSize));
      }
      ClosePart();
    }
    return Status::Ok();
  }

  std::vector<PartPlan> Finish() {
    if (!cur_.extents.empty() || parts_.empty()) ClosePart();
    return std::move(parts_);
  }

 private:
  uint64_t GapCost(uint64_t block) const { return block > cursor_ ? kChunkHeaderSize : 0; }
  void Append(const Extent& e, uint64_t cost) {
    cur_.chunks += 1 + (e.block > cursor_ ? 1 : 0);
    cur_.bytes += cost;
    cur_.extents.push_back(e);
    cursor_ = e.block + e.blocks;
  }
  void ClosePart() {
    if (cursor_ < total_blks_) {
      ++cur_.chunks;
      cur_.bytes += kChunkHeaderSize;
    }
    parts_.push_back(std::move(cur_));
    cur_ = PartPlan{};
    cur_.bytes = kFileHeaderSize;
    cursor_ = 0;
  }

  uint32_t blk_;
  uint32_t total_blks_;
  uint64_t max_;
  PartPlan cur_{{}, 0, kFileHeaderSize};
  uint64_t cursor_ = 0;  // next block not covered in the current part
  std::vector<PartPlan> parts_;
};

// Collects the extents of a sparse image while it is validated.
class ExtentSink : public NullSink {
 public:
  Status OnHeader(const FileHeader& h) override {
    header = h;
    return Status::Ok();
  }
  Status OnChunk(const ChunkInfo& c) override {
    if ((c.type == kChunkRaw || c.type == kChunkFill) && c.blocks > 0) {
      extents.push_back({c.type, c.output_offset / header.blk_sz, c.blocks, c.value, c.payload_offset});
    }
    return Status::Ok();
  }
  FileHeader header;
  std::vector<Extent> extents;
};

}  // namespace

Result<std::vector<PartPlan>> PlanResparse(uint32_t blk_sz, uint32_t total_blks, const std::vector<Extent>& extents,
                                           uint64_t max_size) {
  Planner p(blk_sz, total_blks, max_size);
  for (const Extent& e : extents) FP_RETURN_IF_ERROR(p.Add(e));
  return p.Finish();
}

Result<ResparsePlan> PlanResparseFile(int in_fd, const std::string& in_name, uint64_t max_size) {
  ExtentSink sink;
  if (::lseek(in_fd, 0, SEEK_SET) != 0) return ErrnoError(fmt::format("{} must be seekable", in_name));
  Status s = DecodeFd(in_fd, sink, {}, in_name);
  if (!s.ok()) return s.code() == Code::kCorrupt ? s.WithContext(in_name) : s;
  FP_ASSIGN_OR_RETURN(auto parts, PlanResparse(sink.header.blk_sz, sink.header.total_blks, sink.extents, max_size));
  return ResparsePlan{sink.header, std::move(parts)};
}

Status WritePart(const ResparsePlan& plan, size_t index, int in_fd, std::string_view in_name, Output* out) {
  const FileHeader& h = plan.header;
  const PartPlan& part = plan.parts.at(index);
  ChunkWriter w(out, h.blk_sz);
  FP_RETURN_IF_ERROR(w.FileHeader(h.total_blks, part.chunks));
  uint64_t cursor = 0;
  for (const Extent& e : part.extents) {
    if (e.block > cursor) FP_RETURN_IF_ERROR(w.DontCare(static_cast<uint32_t>(e.block - cursor)));
    if (e.type == kChunkFill) {
      FP_RETURN_IF_ERROR(w.Fill(e.blocks, e.pattern));
    } else {
      FP_RETURN_IF_ERROR(w.RawHeader(e.blocks));
      FP_RETURN_IF_ERROR(w.RawFrom(in_fd, e.input_offset, uint64_t{e.blocks} * h.blk_sz, in_name));
    }
    cursor = e.block + e.blocks;
  }
  if (cursor < h.total_blks) FP_RETURN_IF_ERROR(w.DontCare(static_cast<uint32_t>(h.total_blks - cursor)));
  FP_RETURN_IF_ERROR(w.Flush());
  if (w.offset() != part.bytes || w.chunks() != part.chunks) {
    return Internal(fmt::format("resparse part {}: wrote {} bytes in {} chunks, planned {} in {}", index, w.offset(),
                                w.chunks(), part.bytes, part.chunks));
  }
  return Status::Ok();
}

}  // namespace flashpipe::sparse
