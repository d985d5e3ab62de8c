#include "output/sparse_output.h"

#include <algorithm>
#include <cstring>

#include "sparse/encoder.h"
#include "sparse/format.h"

namespace flashpipe::output {
namespace {

constexpr uint32_t kBlock = kRunBlock;

}  // namespace

// The open run of blocks of one kind, closed into a chunk when the kind,
// the fill pattern or a size cap changes.
struct SparseOutput::Impl {
  Mode mode = Mode::kPatch;
  SparseOptions options;
  SparsePlan* plan = nullptr;
  std::unique_ptr<sparse::ChunkWriter> w;
  uint32_t total_blks = 0;
  uint32_t raw_cap = 0;
  uint16_t kind = 0;  // 0: no open run
  uint32_t blocks = 0;
  uint32_t pattern = 0;
  uint64_t raw_header_at = 0;
  uint32_t chunks = 0;
  size_t plan_next = 0;

  bool writing() const { return mode != Mode::kPlan; }
  Status Close();
  Status OpenRaw();
  Status Raw(std::span<const uint8_t> data);
  Status Extend(uint16_t type, uint64_t n, uint32_t value);
  Status Blocks(std::span<const uint8_t> data);
};

Status SparseOutput::Impl::Close() {
  if (kind == 0) return Status::Ok();
  ++chunks;
  uint16_t type = std::exchange(kind, 0);
  uint32_t n = std::exchange(blocks, 0);
  if (mode == Mode::kPlan) {
    if (type == sparse::kChunkRaw) plan->raw_blocks.push_back(n);
    return Status::Ok();
  }
  switch (type) {
    case sparse::kChunkRaw:
      if (mode == Mode::kFromPlan && n != plan->raw_blocks[plan_next - 1]) {
        return Corrupt("the source read differently the second time (a RAW chunk changed size): "
                       "is it being written?");
      }
      return mode == Mode::kPatch ? w->PatchRawHeader(raw_header_at, n) : Status::Ok();
    case sparse::kChunkFill: return w->Fill(n, pattern);
    default: return w->DontCare(n);
  }
}

Status SparseOutput::Impl::OpenRaw() {
  kind = sparse::kChunkRaw;
  if (!writing()) return Status::Ok();
  raw_header_at = w->offset();
  uint32_t n = 0;
  if (mode == Mode::kFromPlan) {
    if (plan_next >= plan->raw_blocks.size()) {
      return Corrupt("the source read differently the second time (more RAW chunks): is it being written?");
    }
    n = plan->raw_blocks[plan_next++];
  }
  return w->RawHeader(n);
}

Status SparseOutput::Impl::Raw(std::span<const uint8_t> data) {
  while (!data.empty()) {
    if (kind != sparse::kChunkRaw || blocks == raw_cap) {
      FP_RETURN_IF_ERROR(Close());
      FP_RETURN_IF_ERROR(OpenRaw());
    }
    uint32_t n = std::min<uint32_t>(raw_cap - blocks, static_cast<uint32_t>(data.size() / kBlock));
    if (writing()) FP_RETURN_IF_ERROR(w->RawData(data.first(size_t{n} * kBlock)));
    blocks += n;
    data = data.subspan(size_t{n} * kBlock);
  }
  return Status::Ok();
}

Status SparseOutput::Impl::Extend(uint16_t type, uint64_t n, uint32_t value) {
  while (n > 0) {
    if (kind != type || pattern != value || blocks == UINT32_MAX) {
      FP_RETURN_IF_ERROR(Close());
      kind = type;
      pattern = value;
    }
    uint32_t add = static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX - blocks));
    blocks += add;
    n -= add;
  }
  return Status::Ok();
}

// Whole blocks: stretches of RAW written straight from `data`, uniform
// blocks as FILL.
Status SparseOutput::Impl::Blocks(std::span<const uint8_t> data) {
  size_t raw = 0;
  for (size_t i = 0; i < data.size(); i += kBlock) {
    uint32_t value;
    if (!sparse::IsUniformBlock(data.subspan(i, kBlock), &value)) continue;
    if (raw < i) FP_RETURN_IF_ERROR(Raw(data.subspan(raw, i - raw)));
    FP_RETURN_IF_ERROR(Extend(sparse::kChunkFill, 1, value));
    raw = i + kBlock;
  }
  if (raw < data.size()) FP_RETURN_IF_ERROR(Raw(data.subspan(raw)));
  return Status::Ok();
}

SparseOutput::~SparseOutput() = default;

Result<std::unique_ptr<SparseOutput>> SparseOutput::Create(sparse::Output* out, uint64_t length, Mode mode,
                                                           const SparseOptions& options, SparsePlan* plan) {
  uint64_t blocks = (length + kBlock - 1) / kBlock;
  if (blocks == 0) return InvalidArgument("a sparse image holds at least one block: nothing to read");
  if (blocks > UINT32_MAX) {
    return InvalidArgument(fmt::format("{} bytes are {} blocks of 4 KiB, more than a sparse image holds (2^32-1)",
                                       length, blocks));
  }
  auto s = std::unique_ptr<SparseOutput>(new SparseOutput());
  s->impl_ = std::make_unique<Impl>();
  Impl& m = *s->impl_;
  m.mode = mode;
  m.options = options;
  m.plan = plan;
  m.total_blks = static_cast<uint32_t>(blocks);
  m.raw_cap = static_cast<uint32_t>(
      std::clamp<uint64_t>(options.max_raw_chunk / kBlock, 1, (UINT32_MAX - sparse::kChunkHeaderSize) / kBlock));
  if (m.writing()) {
    m.w = std::make_unique<sparse::ChunkWriter>(out, kBlock);
    FP_RETURN_IF_ERROR(m.w->FileHeader(m.total_blks, mode == Mode::kFromPlan ? plan->chunks : 0));
  }
  return s;
}

Status SparseOutput::OnData(uint64_t, std::span<const uint8_t> data) {
  size_t whole = data.size() / kBlock * kBlock;
  FP_RETURN_IF_ERROR(impl_->Blocks(data.first(whole)));
  if (whole == data.size()) return Status::Ok();
  uint8_t last[kBlock] = {};  // the image's short last block, padded
  std::memcpy(last, data.data() + whole, data.size() - whole);
  return impl_->Blocks(last);
}

Status SparseOutput::OnZeros(uint64_t, uint64_t length, ZeroKind) {
  uint64_t n = (length + kBlock - 1) / kBlock;
  if (impl_->options.dont_care_zeros) return impl_->Extend(sparse::kChunkDontCare, n, 0);
  return impl_->Extend(sparse::kChunkFill, n, 0);
}

Status SparseOutput::Finish(uint64_t) {
  Impl& m = *impl_;
  FP_RETURN_IF_ERROR(m.Close());
  if (m.mode == Mode::kPlan) {
    m.plan->chunks = m.chunks;
    return Status::Ok();
  }
  if (m.mode == Mode::kFromPlan && (m.chunks != m.plan->chunks || m.plan_next != m.plan->raw_blocks.size())) {
    return Corrupt(fmt::format("the source read differently the second time ({} chunks, planned {}): "
                               "is it being written?", m.chunks, m.plan->chunks));
  }
  if (m.mode == Mode::kPatch) FP_RETURN_IF_ERROR(m.w->PatchFileHeader(m.total_blks, m.chunks));
  return m.w->Flush();
}

uint64_t SparseOutput::bytes() const { return impl_->w ? impl_->w->offset() : 0; }
uint32_t SparseOutput::chunks() const { return impl_->chunks; }

}  // namespace flashpipe::output
