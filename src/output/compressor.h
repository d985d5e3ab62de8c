// Compressor: one streaming encoder (zstd, xz, gzip) writing a complete
// stream (one frame, one .xz stream, one gzip member) to an Output, so that
// `flashpipe write`, the decompressor of src/input, and the zstd, xz and gzip
// tools all read it.
//
//   zstd  libzstd, ZSTD_c_nbWorkers threads (compression overlaps the
//         caller), content size and checksum in the frame
//   xz    liblzma, lzma_stream_encoder_mt with as many threads as fit the
//         memory budget (one thread: the plain encoder), CRC64
//   gzip  zlib deflate, one thread
// `level` -1 means the format's default: zstd 3, gzip 6 as their tools have
// it, xz 3 (not xz's 6, which needs 94 MiB per thread). xz threads are
// limited to what fits `memory_budget`; zstd's workers are bounded by it
// through the job size.
//
// CompressOutput is the RunSink that feeds one: data as it is, zero runs
// from a shared zero buffer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "output/format.h"
#include "output/run_sink.h"
#include "sparse/writer.h"

namespace flashpipe::output {

struct CompressOptions {
  int level = -1;             // -1: the format's default
  unsigned threads = 0;       // 0: the online processors
  uint64_t memory_budget = uint64_t{40} << 20;
  uint64_t size_hint = 0;     // the uncompressed size, when known (zstd records it)
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  virtual Status Write(std::span<const uint8_t> data) = 0;
  // Ends the stream. Call once.
  virtual Status Finish() = 0;
  virtual unsigned threads() const = 0;
  uint64_t bytes_out() const { return bytes_out_; }

 protected:
  uint64_t bytes_out_ = 0;
};

// REQUIRES: IsCompressed(format). `out` must outlive the compressor.
Result<std::unique_ptr<Compressor>> MakeCompressor(Format format, sparse::Output* out, const CompressOptions& options);

// The levels each format takes, for --level's check (-1 always passes).
Status CheckLevel(Format format, int level);

class CompressOutput : public RunSink {
 public:
  explicit CompressOutput(std::unique_ptr<Compressor> c) : c_(std::move(c)) {}
  Status OnData(uint64_t, std::span<const uint8_t> data) override { return c_->Write(data); }
  Status OnZeros(uint64_t, uint64_t length, ZeroKind) override {
    for (uint64_t n; length > 0; length -= n) {
      n = std::min<uint64_t>(length, ZeroBuffer().size());
      FP_RETURN_IF_ERROR(c_->Write(ZeroBuffer().first(n)));
    }
    return Status::Ok();
  }
  Status Finish(uint64_t) override { return c_->Finish(); }
  const Compressor& compressor() const { return *c_; }

 private:
  std::unique_ptr<Compressor> c_;
};

}  // namespace flashpipe::output
