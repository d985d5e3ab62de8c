#include "output/range_mapper.h"

#include "input/bmap.h"

namespace flashpipe::output {

struct RangeMapper::Impl {
  BmapOptions options;
  OnRange on_range;
  uint64_t first_block = 0;
  input::Digest digest;
  bool open = false;  // a range is open
  uint64_t first = 0, last = 0;
  uint64_t mapped = 0, ranges = 0;

  explicit Impl(input::Digest d) : digest(std::move(d)) {}

  // Adds [offset, offset + length) to the map; `data` its bytes, or empty
  // for zeros.
  Status Map(uint64_t offset, uint64_t length, std::span<const uint8_t> data) {
    uint64_t b0 = first_block + offset / kRunBlock, b1 = first_block + (offset + length - 1) / kRunBlock;
    if (open && b0 != last + 1) FP_RETURN_IF_ERROR(Close());
    if (!open) {
      open = true;
      first = b0;
    }
    last = b1;
    if (!data.empty()) {
      digest.Update(data);
      return Status::Ok();
    }
    for (uint64_t n; length > 0; length -= n) {
      n = std::min<uint64_t>(length, ZeroBuffer().size());
      digest.Update(ZeroBuffer().first(n));
    }
    return Status::Ok();
  }

  Status Close() {
    if (!open) return Status::Ok();
    open = false;
    mapped += last - first + 1;
    ++ranges;
    return on_range(BmapRange{first, last, digest.HexFinal()});
  }
};

RangeMapper::~RangeMapper() = default;

Result<std::unique_ptr<RangeMapper>> RangeMapper::Create(const BmapOptions& options, OnRange on_range,
                                                         uint64_t first_block) {
  FP_ASSIGN_OR_RETURN(input::Digest digest, input::Digest::Create("sha256"));
  auto m = std::unique_ptr<RangeMapper>(new RangeMapper());
  m->impl_ = std::make_unique<Impl>(std::move(digest));
  m->impl_->options = options;
  m->impl_->on_range = std::move(on_range);
  m->impl_->first_block = first_block;
  return m;
}

Status RangeMapper::OnData(uint64_t offset, std::span<const uint8_t> data) {
  if (data.empty()) return Status::Ok();
  return impl_->Map(offset, data.size(), data);
}

Status RangeMapper::OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) {
  if (length == 0) return Status::Ok();
  if (kind == ZeroKind::kRead && impl_->options.map_read_zeros) return impl_->Map(offset, length, {});
  return impl_->Close();
}

Status RangeMapper::Finish(uint64_t) { return impl_->Close(); }

uint64_t RangeMapper::mapped_blocks() const { return impl_->mapped; }
uint64_t RangeMapper::ranges() const { return impl_->ranges; }

}  // namespace flashpipe::output
