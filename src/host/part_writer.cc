#include "host/part_writer.h"

#include <algorithm>
#include <array>
#include <vector>

#include "base/endian.h"
#include "base/fd_io.h"

namespace flashpipe::host {
namespace {

using sparse::kChunkHeaderSize;

constexpr size_t kStageLimit = 64 << 10;
constexpr size_t kPayloadPiece = 1 << 20;

// Stages headers and sends them with the payload that follows; counts
// every byte against the plan.
class PartOut {
 public:
  PartOut(DataOut& out, uint64_t planned) : out_(out), planned_(planned) { stage_.reserve(kStageLimit + 64); }

  Status Stage(std::span<const uint8_t> bytes) {
    FP_RETURN_IF_ERROR(Count(bytes.size()));
    stage_.insert(stage_.end(), bytes.begin(), bytes.end());
    return stage_.size() >= kStageLimit ? Flush() : Status::Ok();
  }
  // Small payloads (a fragmented image) are copied into the stage, so that
  // a send carries at least kStageLimit bytes; large ones go as they are.
  Status Payload(std::span<const uint8_t> bytes) {
    if (bytes.size() < kStageLimit) return Stage(bytes);
    FP_RETURN_IF_ERROR(Count(bytes.size()));
    std::array<std::span<const uint8_t>, 2> pieces{std::span<const uint8_t>(stage_), bytes};
    auto list = stage_.empty() ? std::span(pieces).subspan(1) : std::span(pieces);
    FP_RETURN_IF_ERROR(out_.Send(list));
    stage_.clear();
    return Status::Ok();
  }
  bool by_file() const { return out_.can_send_file(); }
  // A span of the image file: read into the stage when small, else sent by
  // the kernel after what is staged.
  Status PayloadFile(const FileSpan& f) {
    if (f.size < kStageLimit) {
      FP_RETURN_IF_ERROR(Count(f.size));
      size_t at = stage_.size();
      stage_.resize(at + f.size);
      FP_RETURN_IF_ERROR(PreadExact(f.fd, std::span(stage_).subspan(at), f.offset, "the image"));
      return stage_.size() >= kStageLimit ? Flush() : Status::Ok();
    }
    FP_RETURN_IF_ERROR(Count(f.size));
    std::array<std::span<const uint8_t>, 1> head{std::span<const uint8_t>(stage_)};
    FP_RETURN_IF_ERROR(out_.SendFile(stage_.empty() ? std::span(head).first(0) : std::span(head), f));
    stage_.clear();
    return Status::Ok();
  }
  Status Finish() {
    FP_RETURN_IF_ERROR(Flush());
    if (sent_ != planned_) return Internal(fmt::format("part of {} bytes planned, {} made", planned_, sent_));
    return Status::Ok();
  }

 private:
  Status Count(size_t n) {
    if (sent_ + n > planned_) {
      return Internal(fmt::format("part of {} bytes planned, more made (at {})", planned_, sent_ + n));
    }
    sent_ += n;
    return Status::Ok();
  }
  Status Flush() {
    if (stage_.empty()) return Status::Ok();
    std::array<std::span<const uint8_t>, 1> pieces{std::span<const uint8_t>(stage_)};
    FP_RETURN_IF_ERROR(out_.Send(pieces));
    stage_.clear();
    return Status::Ok();
  }

  DataOut& out_;
  uint64_t planned_;
  uint64_t sent_ = 0;
  std::vector<uint8_t> stage_;
};

Status ChunkHeader(PartOut& o, uint16_t type, uint64_t blocks, uint64_t payload) {
  std::array<uint8_t, kChunkHeaderSize> h;
  sparse::SerializeChunkHeader({type, 0, static_cast<uint32_t>(blocks), static_cast<uint32_t>(kChunkHeaderSize + payload)},
                               h);
  return o.Stage(h);
}

Status SendPayloadFile(PartOut& o, PayloadSource& payload, uint64_t offset, uint64_t n) {
  while (n > 0) {
    FP_ASSIGN_OR_RETURN(FileSpan f, payload.PayloadFile(offset, n));
    if (f.size == 0 || f.size > n) return Internal("payload source broke its contract");
    FP_RETURN_IF_ERROR(o.PayloadFile(f));
    offset += f.size;
    n -= f.size;
  }
  return Status::Ok();
}

Status SendPayload(PartOut& o, PayloadSource& payload, uint64_t offset, uint64_t n) {
  if (o.by_file() && payload.in_file()) return SendPayloadFile(o, payload, offset, n);
  while (n > 0) {
    FP_ASSIGN_OR_RETURN(auto bytes, payload.Payload(offset, static_cast<size_t>(std::min<uint64_t>(n, kPayloadPiece))));
    if (bytes.empty() || bytes.size() > n) return Internal("payload source broke its contract");
    FP_RETURN_IF_ERROR(o.Payload(bytes));
    offset += bytes.size();
    n -= bytes.size();
  }
  return Status::Ok();
}

// Calls fn(record, skip, blocks) for each record piece of the part.
template <typename F>
Status ForEachPiece(const Part& part, RecordSource& records, F fn) {
  for (uint64_t i = part.begin.record; i < part.end.record || (i == part.end.record && part.end.blocks > 0); ++i) {
    FP_ASSIGN_OR_RETURN(auto r, records.At(i));
    if (!r) return Internal(fmt::format("record {} of the plan is gone", i));
    uint32_t skip = i == part.begin.record ? part.begin.blocks : 0;
    uint32_t end = i == part.end.record ? part.end.blocks : r->blocks;
    if (end <= skip || end > r->blocks) return Internal(fmt::format("record {} does not match the plan", i));
    FP_RETURN_IF_ERROR(fn(*r, skip, end - skip));
  }
  return Status::Ok();
}

Status WriteSparsePart(const Part& part, const ImageShape& shape, RecordSource& records, PayloadSource& payload,
                       PartOut& o) {
  std::array<uint8_t, sparse::kFileHeaderSize> fh;
  sparse::FileHeader header;
  header.blk_sz = shape.blk_sz;
  header.total_blks = part.total_blks;
  header.total_chunks = part.chunks;
  sparse::SerializeFileHeader(header, fh);
  FP_RETURN_IF_ERROR(o.Stage(fh));
  uint64_t cursor = 0;
  FP_RETURN_IF_ERROR(ForEachPiece(part, records, [&](const Record& r, uint32_t skip, uint32_t n) -> Status {
    uint64_t block = r.block + skip;
    if (block > cursor) FP_RETURN_IF_ERROR(ChunkHeader(o, sparse::kChunkDontCare, block - cursor, 0));
    cursor = block + n;
    if (r.type == sparse::kChunkFill) {
      FP_RETURN_IF_ERROR(ChunkHeader(o, sparse::kChunkFill, n, 4));
      uint8_t p[4];
      StoreLE<uint32_t>(p, r.pattern);
      return o.Stage(p);
    }
    uint64_t bytes = uint64_t{n} * shape.blk_sz;
    FP_RETURN_IF_ERROR(ChunkHeader(o, sparse::kChunkRaw, n, bytes));
    return SendPayload(o, payload, r.payload + uint64_t{skip} * shape.blk_sz, bytes);
  }));
  if (part.total_blks > cursor) FP_RETURN_IF_ERROR(ChunkHeader(o, sparse::kChunkDontCare, part.total_blks - cursor, 0));
  return Status::Ok();
}

// The image's own bytes: RAW payload, FILL patterns spelled out, cut at
// the image's size (its last block was padded).
Status WriteRawPart(const Part& part, const ImageShape& shape, RecordSource& records, PayloadSource& payload,
                    PartOut& o) {
  std::vector<uint8_t> pattern;
  uint64_t at = 0;  // image byte
  return ForEachPiece(part, records, [&](const Record& r, uint32_t skip, uint32_t n) -> Status {
    uint64_t begin = (r.block + skip) * shape.blk_sz;
    if (begin != at) return Internal(fmt::format("raw part: a gap at byte {}", at));
    uint64_t len = std::min<uint64_t>(uint64_t{n} * shape.blk_sz, shape.bytes - begin);
    at = begin + len;
    if (r.type == sparse::kChunkRaw) return SendPayload(o, payload, r.payload + uint64_t{skip} * shape.blk_sz, len);
    pattern.resize(std::min<uint64_t>(len, 64 << 10) / 4 * 4 + 4);
    for (size_t i = 0; i < pattern.size(); i += 4) StoreLE<uint32_t>(&pattern[i], r.pattern);
    for (uint64_t done = 0; done < len;) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(len - done, pattern.size()));
      FP_RETURN_IF_ERROR(o.Stage(std::span(pattern).first(k)));
      done += k;
    }
    return Status::Ok();
  });
}

}  // namespace

Status WritePart(const Part& part, const ImageShape& shape, RecordSource& records, PayloadSource& payload,
                 DataOut& out) {
  PartOut o(out, part.bytes);
  FP_RETURN_IF_ERROR(part.raw ? WriteRawPart(part, shape, records, payload, o)
                              : WriteSparsePart(part, shape, records, payload, o));
  return o.Finish();
}

}  // namespace flashpipe::host
