#include "output/sparse_output.h"

#include <cstring>
#include <optional>

#include "sparse/encoder.h"
#include "sparse/format.h"
#include "sparse/run_emitter.h"

namespace flashpipe::output {
namespace {

constexpr uint32_t kBlock = kRunBlock;

}  // namespace

struct SparseOutput::Impl {
  Mode mode = Mode::kPatch;
  SparseOptions options;
  SparsePlan* plan = nullptr;
  std::unique_ptr<sparse::ChunkWriter> w;
  std::optional<sparse::RunEmitter> em;
  uint32_t total_blks = 0;

  Status Blocks(std::span<const uint8_t> data);
};

// Whole blocks: stretches of RAW written straight from `data`, uniform
// blocks as FILL.
Status SparseOutput::Impl::Blocks(std::span<const uint8_t> data) {
  size_t raw = 0;
  for (size_t i = 0; i < data.size(); i += kBlock) {
    uint32_t value;
    if (!sparse::IsUniformBlock(data.subspan(i, kBlock), &value)) continue;
    if (raw < i) FP_RETURN_IF_ERROR(em->Raw(data.subspan(raw, i - raw)));
    FP_RETURN_IF_ERROR(em->Fill(1, value));
    raw = i + kBlock;
  }
  if (raw < data.size()) FP_RETURN_IF_ERROR(em->Raw(data.subspan(raw)));
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
  if (mode != Mode::kPlan) {
    m.w = std::make_unique<sparse::ChunkWriter>(out, kBlock);
    FP_RETURN_IF_ERROR(m.w->FileHeader(m.total_blks, mode == Mode::kFromPlan ? plan->chunks : 0));
  }
  using EmMode = sparse::RunEmitter::Mode;
  const EmMode em_mode = mode == Mode::kPatch  ? EmMode::kSeekBack
                         : mode == Mode::kPlan ? EmMode::kPlan
                                               : EmMode::kFromPlan;
  m.em.emplace(em_mode, m.w.get(), kBlock, options.max_raw_chunk, /*crc=*/false,
               plan != nullptr ? &plan->raw_blocks : nullptr);
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
  if (impl_->options.dont_care_zeros) return impl_->em->Skip(n);
  return impl_->em->Fill(n, 0);
}

Status SparseOutput::Finish(uint64_t) {
  Impl& m = *impl_;
  Status closed = m.em->Close();
  if (!closed.ok() && m.mode == Mode::kFromPlan && closed.code() == Code::kCorrupt) {
    return Corrupt(fmt::format("{}: is the source being written?", closed.message()));
  }
  FP_RETURN_IF_ERROR(closed);
  if (m.mode == Mode::kPlan) {
    m.plan->chunks = m.em->chunks();
    return Status::Ok();
  }
  if (m.mode == Mode::kFromPlan &&
      (m.em->chunks() != m.plan->chunks || m.em->plan_used() != m.plan->raw_blocks.size())) {
    return Corrupt(fmt::format("the source read differently the second time ({} chunks, planned {}): "
                               "is it being written?", m.em->chunks(), m.plan->chunks));
  }
  if (m.mode == Mode::kPatch) FP_RETURN_IF_ERROR(m.w->PatchFileHeader(m.total_blks, m.em->chunks()));
  return m.w->Flush();
}

uint64_t SparseOutput::bytes() const { return impl_->w ? impl_->w->offset() : 0; }
uint32_t SparseOutput::chunks() const { return impl_->em->chunks(); }

}  // namespace flashpipe::output
