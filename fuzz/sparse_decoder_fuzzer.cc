// libFuzzer target for the sparse decoder. The first byte picks the options
// (check_crc, tolerate_missing_tail) and a seed for the slice sizes; the rest
// is the image, fed in slices of 1..4096 bytes, with some RAW payload handed
// over through AdvanceRaw as a zero-copy caller would. The sink checks the
// decoder's promises: events in order, inside the image, RAW pieces
// contiguous, OnEnd only after everything.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "base/crc32.h"
#include "sparse/decoder.h"

namespace {

using namespace flashpipe;
using namespace flashpipe::sparse;

void Check(bool ok) {
  if (!ok) std::abort();
}

class CheckingSink : public Sink {
 public:
  Status OnHeader(const FileHeader& h) override {
    Check(!header_);
    header_ = true;
    size_ = h.image_size();
    return Status::Ok();
  }
  Status OnRaw(uint64_t off, std::span<const uint8_t> d) override { return Range(off, d.size()); }
  Status OnFill(uint64_t off, uint64_t len, uint32_t) override {
    Check(len % 4 == 0 && len > 0);
    return Range(off, len);
  }
  Status OnSkip(uint64_t off, uint64_t len) override {
    Check(len > 0);
    return Range(off, len);
  }
  Status OnChunk(const ChunkInfo& c) override {
    Check(c.index == chunks_++);
    return Status::Ok();
  }
  Status OnEnd() override {
    Check(header_ && !ended_ && next_ == size_);
    ended_ = true;
    return Status::Ok();
  }
  void Advanced(uint64_t off, uint64_t n) { Check(Range(off, n).ok()); }

 private:
  Status Range(uint64_t off, uint64_t len) {
    Check(header_ && !ended_ && off == next_ && len <= size_ - off);
    next_ = off + len;
    return Status::Ok();
  }
  bool header_ = false, ended_ = false;
  uint64_t size_ = 0, next_ = 0;
  uint32_t chunks_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::span<const uint8_t> in(data + 1, size - 1);
  DecoderOptions opt{.check_crc = (mode & 1) != 0, .tolerate_missing_tail = (mode & 2) != 0};
  CheckingSink sink;
  Decoder d(&sink, opt);
  uint32_t rng = mode * 2654435761u + 1;
  Status s;
  while (!in.empty() && s.ok()) {
    rng = rng * 1103515245u + 12345u;
    if ((mode & 4) && d.raw_pending() > 0 && (rng >> 16) % 3 == 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(d.raw_pending(), std::min<size_t>(in.size(), 1 + (rng >> 20))));
      sink.Advanced(d.raw_output_offset(), n);
      s = d.AdvanceRaw(n, Crc32Update(0, in.data(), n));
      in = in.subspan(n);
      continue;
    }
    size_t n = std::min<size_t>(in.size(), 1 + (rng >> 16) % 4096);
    s = d.Feed(in.first(n));
    in = in.subspan(n);
  }
  Status f = d.Finish();
  if (!s.ok()) Check(!f.ok() && f.message() == s.message());  // errors are sticky
  Check(f.ok() == d.finished());
  return 0;
}
