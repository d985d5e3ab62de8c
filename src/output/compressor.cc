#include "output/compressor.h"

#include <lzma.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <vector>

namespace flashpipe::output {
namespace {

constexpr size_t kOutBuffer = size_t{1} << 20;

struct Levels {
  Format format;
  int min, max, fallback;
};
// xz defaults to 3 (4 MiB dictionary, about 32 MiB), not xz's 6 (94 MiB
// per thread), so that `read` stays within its memory bound.
constexpr Levels kDefaults[] = {
    {Format::kZstd, 1, 19, 3},
    {Format::kXz, 0, 9, 3},
    {Format::kGzip, 1, 9, 6},
};

const Levels* LevelsFor(Format format) {
  for (const Levels& l : kDefaults) {
    if (l.format == format) return &l;
  }
  return nullptr;
}

unsigned Threads(const CompressOptions& o) {
  if (o.threads > 0) return o.threads;
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

class Zstd final : public Compressor {
 public:
  ~Zstd() override { ZSTD_freeCCtx(cctx_); }
  Status Init(int level, unsigned threads, uint64_t size_hint, uint64_t budget) {
    cctx_ = ZSTD_createCCtx();
    if (cctx_ == nullptr) return Internal("zstd: cannot create a context");
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
    // A library built without threads refuses workers: it then compresses inline.
    if (threads > 1 && !ZSTD_isError(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_nbWorkers, static_cast<int>(threads)))) {
      threads_ = threads;
      // Each worker holds about three jobs' worth (input, overlap, output):
      // jobs sized to the budget keep memory flat at any level's default.
      uint64_t job = std::clamp<uint64_t>(budget / (4 * (uint64_t{threads} + 1)), 1 << 20, 16 << 20);
      ZSTD_CCtx_setParameter(cctx_, ZSTD_c_jobSize, static_cast<int>(job));
    }
    if (size_hint > 0) ZSTD_CCtx_setPledgedSrcSize(cctx_, size_hint);
    return Status::Ok();
  }
  Status Write(std::span<const uint8_t> data) override { return Run(data, ZSTD_e_continue); }
  Status Finish() override { return Run({}, ZSTD_e_end); }
  unsigned threads() const override { return threads_; }
  void SetOutput(sparse::Output* out) { out_ = out; }

 private:
  Status Run(std::span<const uint8_t> data, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{data.data(), data.size(), 0};
    for (;;) {
      ZSTD_outBuffer o{buf_.data(), buf_.size(), 0};
      size_t left = ZSTD_compressStream2(cctx_, &o, &in, mode);
      if (ZSTD_isError(left)) return Internal(fmt::format("zstd: {}", ZSTD_getErrorName(left)));
      if (o.pos > 0) FP_RETURN_IF_ERROR(out_->Write({buf_.data(), o.pos}));
      bytes_out_ += o.pos;
      bool done = mode == ZSTD_e_end ? left == 0 : in.pos == in.size;
      if (done) return Status::Ok();
    }
  }
  ZSTD_CCtx* cctx_ = nullptr;
  sparse::Output* out_ = nullptr;
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(kOutBuffer);
  unsigned threads_ = 1;
};

class Xz final : public Compressor {
 public:
  ~Xz() override { lzma_end(&strm_); }
  Status Init(int level, unsigned threads, uint64_t budget) {
    lzma_mt mt{};
    mt.preset = static_cast<uint32_t>(level);
    mt.check = LZMA_CHECK_CRC64;
    // As many threads as fit the budget; one thread: the plain encoder,
    // which needs no block buffers.
    for (mt.threads = threads; mt.threads > 1 && lzma_stream_encoder_mt_memusage(&mt) > budget;) --mt.threads;
    lzma_ret r = mt.threads > 1 ? lzma_stream_encoder_mt(&strm_, &mt)
                                : lzma_easy_encoder(&strm_, mt.preset, LZMA_CHECK_CRC64);
    if (r != LZMA_OK) return Internal(fmt::format("xz: cannot start the encoder (liblzma error {})", int(r)));
    threads_ = std::max(mt.threads, 1u);
    return Status::Ok();
  }
  Status Write(std::span<const uint8_t> data) override { return Run(data, LZMA_RUN); }
  Status Finish() override { return Run({}, LZMA_FINISH); }
  unsigned threads() const override { return threads_; }
  void SetOutput(sparse::Output* out) { out_ = out; }

 private:
  Status Run(std::span<const uint8_t> data, lzma_action action) {
    strm_.next_in = data.data();
    strm_.avail_in = data.size();
    for (;;) {
      strm_.next_out = buf_.data();
      strm_.avail_out = buf_.size();
      lzma_ret r = lzma_code(&strm_, action);
      size_t n = buf_.size() - strm_.avail_out;
      if (n > 0) FP_RETURN_IF_ERROR(out_->Write({buf_.data(), n}));
      bytes_out_ += n;
      if (r == LZMA_STREAM_END) return Status::Ok();
      if (r != LZMA_OK) return Internal(fmt::format("xz: liblzma error {}", int(r)));
      if (action == LZMA_RUN && strm_.avail_in == 0) return Status::Ok();
    }
  }
  lzma_stream strm_ = LZMA_STREAM_INIT;
  sparse::Output* out_ = nullptr;
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(kOutBuffer);
  unsigned threads_ = 1;
};

class Gzip final : public Compressor {
 public:
  ~Gzip() override {
    if (started_) deflateEnd(&z_);
  }
  Status Init(int level) {
    if (deflateInit2(&z_, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      return Internal("gzip: cannot start zlib's deflate");
    }
    started_ = true;
    return Status::Ok();
  }
  Status Write(std::span<const uint8_t> data) override {
    // zlib counts in uInt: feed at most 1 GiB per call.
    while (!data.empty()) {
      size_t n = std::min<size_t>(data.size(), 1u << 30);
      FP_RETURN_IF_ERROR(Run(data.first(n), Z_NO_FLUSH));
      data = data.subspan(n);
    }
    return Status::Ok();
  }
  Status Finish() override { return Run({}, Z_FINISH); }
  unsigned threads() const override { return 1; }
  void SetOutput(sparse::Output* out) { out_ = out; }

 private:
  Status Run(std::span<const uint8_t> data, int flush) {
    z_.next_in = const_cast<Bytef*>(data.data());
    z_.avail_in = static_cast<uInt>(data.size());
    for (;;) {
      z_.next_out = buf_.data();
      z_.avail_out = static_cast<uInt>(buf_.size());
      int r = deflate(&z_, flush);
      size_t n = buf_.size() - z_.avail_out;
      if (n > 0) FP_RETURN_IF_ERROR(out_->Write({buf_.data(), n}));
      bytes_out_ += n;
      if (r == Z_STREAM_END) return Status::Ok();
      if (r != Z_OK && r != Z_BUF_ERROR) return Internal(fmt::format("gzip: zlib error {}", r));
      if (flush == Z_NO_FLUSH && z_.avail_in == 0) return Status::Ok();
    }
  }
  z_stream z_{};
  bool started_ = false;
  sparse::Output* out_ = nullptr;
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(kOutBuffer);
};

}  // namespace

Status CheckLevel(Format format, int level) {
  const Levels* l = LevelsFor(format);
  if (l == nullptr) return InvalidArgument(fmt::format("--level is for compressed output, not {}", FormatName(format)));
  if (level != -1 && (level < l->min || level > l->max)) {
    return InvalidArgument(fmt::format("{} levels are {} to {}, not {}", FormatName(format), l->min, l->max, level));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Compressor>> MakeCompressor(Format format, sparse::Output* out, const CompressOptions& o) {
  FP_RETURN_IF_ERROR(CheckLevel(format, o.level));
  int level = o.level != -1 ? o.level : LevelsFor(format)->fallback;
  switch (format) {
    case Format::kZstd: {
      auto c = std::make_unique<Zstd>();
      c->SetOutput(out);
      FP_RETURN_IF_ERROR(c->Init(level, Threads(o), o.size_hint, o.memory_budget));
      return std::unique_ptr<Compressor>(std::move(c));
    }
    case Format::kXz: {
      auto c = std::make_unique<Xz>();
      c->SetOutput(out);
      FP_RETURN_IF_ERROR(c->Init(level, Threads(o), o.memory_budget));
      return std::unique_ptr<Compressor>(std::move(c));
    }
    case Format::kGzip: {
      auto c = std::make_unique<Gzip>();
      c->SetOutput(out);
      FP_RETURN_IF_ERROR(c->Init(level));
      return std::unique_ptr<Compressor>(std::move(c));
    }
    default:
      return InvalidArgument(fmt::format("{} is not a compressed format", FormatName(format)));
  }
}

}  // namespace flashpipe::output
