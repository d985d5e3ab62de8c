#include "input/codec.h"

#include <bzlib.h>
#include <lz4frame.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

namespace flashpipe::input {
namespace {

// gzip: zlib with gzip framing; a new member may follow each Z_STREAM_END.
class GzipCodec : public Codec {
 public:
  GzipCodec() { ok_ = inflateInit2(&z_, 15 + 16) == Z_OK; }
  ~GzipCodec() override { inflateEnd(&z_); }
  Result<CodecStep> Step(std::span<const uint8_t> in, std::span<uint8_t> out) override {
    if (!ok_) return Internal("inflateInit2 failed");
    if (in.empty()) return CodecStep{};
    if (at_member_end_) {
      if (inflateReset(&z_) != Z_OK) return Internal("inflateReset failed");
      at_member_end_ = false;
    }
    z_.next_in = const_cast<Bytef*>(in.data());
    z_.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), 1u << 30));
    z_.next_out = out.data();
    z_.avail_out = static_cast<uInt>(std::min<size_t>(out.size(), 1u << 30));
    uInt in_before = z_.avail_in, out_before = z_.avail_out;
    int r = inflate(&z_, Z_NO_FLUSH);
    CodecStep s{in_before - z_.avail_in, out_before - z_.avail_out};
    if (r == Z_STREAM_END) {
      at_member_end_ = true;
    } else if (r != Z_OK && r != Z_BUF_ERROR) {
      return Corrupt(z_.msg ? z_.msg : "inflate error");
    }
    return s;
  }
  bool AtBoundary() const override { return at_member_end_; }

 private:
  z_stream z_{};
  bool ok_ = false;
  bool at_member_end_ = false;
};

// xz: liblzma decodes concatenated .xz streams itself; it reports the end
// only when told the input is finished.
class XzCodec : public Codec {
 public:
  XzCodec() { ok_ = lzma_stream_decoder(&s_, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK; }
  ~XzCodec() override { lzma_end(&s_); }
  Result<CodecStep> Step(std::span<const uint8_t> in, std::span<uint8_t> out) override {
    return Run(in, out, LZMA_RUN);
  }
  bool AtBoundary() const override { return ended_; }
  Result<size_t> Finish(std::span<uint8_t> out) override {
    FP_ASSIGN_OR_RETURN(CodecStep s, Run({}, out, LZMA_FINISH));
    return s.produced;
  }

 private:
  Result<CodecStep> Run(std::span<const uint8_t> in, std::span<uint8_t> out, lzma_action action) {
    if (!ok_) return Internal("lzma_stream_decoder failed");
    s_.next_in = in.data();
    s_.avail_in = in.size();
    s_.next_out = out.data();
    s_.avail_out = out.size();
    lzma_ret r = lzma_code(&s_, action);
    CodecStep s{in.size() - s_.avail_in, out.size() - s_.avail_out};
    if (r == LZMA_STREAM_END) {
      ended_ = true;
    } else if (r == LZMA_BUF_ERROR && action == LZMA_FINISH) {
      if (s.produced == 0) return Corrupt("stream ends inside a block");
    } else if (r != LZMA_OK && r != LZMA_BUF_ERROR) {
      return Corrupt(Describe(r));
    }
    return s;
  }
  static const char* Describe(lzma_ret r) {
    switch (r) {
      case LZMA_FORMAT_ERROR: return "not an xz stream";
      case LZMA_OPTIONS_ERROR: return "unsupported options";
      case LZMA_DATA_ERROR: return "corrupt data";
      case LZMA_MEM_ERROR: return "out of memory";
      default: return "decoder error";
    }
  }
  lzma_stream s_ = LZMA_STREAM_INIT;
  bool ok_ = false;
  bool ended_ = false;
};

// zstd: ZSTD_decompressStream returns 0 exactly when a frame is complete and
// flushed; the next call starts the next frame.
class ZstdCodec : public Codec {
 public:
  ZstdCodec() : d_(ZSTD_createDStream()) {}
  ~ZstdCodec() override { ZSTD_freeDStream(d_); }
  Result<CodecStep> Step(std::span<const uint8_t> in, std::span<uint8_t> out) override {
    if (d_ == nullptr) return Internal("ZSTD_createDStream failed");
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    ZSTD_outBuffer ob{out.data(), out.size(), 0};
    size_t r = ZSTD_decompressStream(d_, &ob, &ib);
    if (ZSTD_isError(r)) return Corrupt(ZSTD_getErrorName(r));
    if (ib.pos > 0 || ob.pos > 0) boundary_ = (r == 0);
    return CodecStep{ib.pos, ob.pos};
  }
  bool AtBoundary() const override { return boundary_; }

 private:
  ZSTD_DStream* d_;
  bool boundary_ = false;
};

// bzip2: each stream ends with BZ_STREAM_END; another may follow (pbzip2).
class Bzip2Codec : public Codec {
 public:
  ~Bzip2Codec() override {
    if (open_) BZ2_bzDecompressEnd(&b_);
  }
  Result<CodecStep> Step(std::span<const uint8_t> in, std::span<uint8_t> out) override {
    if (in.empty()) return CodecStep{};
    if (!open_) {
      b_ = bz_stream{};
      if (BZ2_bzDecompressInit(&b_, 0, 0) != BZ_OK) return Internal("BZ2_bzDecompressInit failed");
      open_ = true;
      ended_ = false;
    }
    b_.next_in = const_cast<char*>(reinterpret_cast<const char*>(in.data()));
    b_.avail_in = static_cast<unsigned>(std::min<size_t>(in.size(), 1u << 30));
    b_.next_out = reinterpret_cast<char*>(out.data());
    b_.avail_out = static_cast<unsigned>(std::min<size_t>(out.size(), 1u << 30));
    unsigned in_before = b_.avail_in, out_before = b_.avail_out;
    int r = BZ2_bzDecompress(&b_);
    CodecStep s{in_before - b_.avail_in, out_before - b_.avail_out};
    if (r == BZ_STREAM_END) {
      BZ2_bzDecompressEnd(&b_);
      open_ = false;
      ended_ = true;
    } else if (r != BZ_OK) {
      return Corrupt(r == BZ_DATA_ERROR_MAGIC ? "bad magic" : "corrupt data");
    }
    return s;
  }
  bool AtBoundary() const override { return !open_ && ended_; }

 private:
  bz_stream b_{};
  bool open_ = false;
  bool ended_ = false;
};

// lz4 frame: LZ4F_decompress returns 0 when a frame is complete and flushed.
class Lz4Codec : public Codec {
 public:
  Lz4Codec() { ok_ = !LZ4F_isError(LZ4F_createDecompressionContext(&d_, LZ4F_VERSION)); }
  ~Lz4Codec() override { LZ4F_freeDecompressionContext(d_); }
  Result<CodecStep> Step(std::span<const uint8_t> in, std::span<uint8_t> out) override {
    if (!ok_) return Internal("LZ4F_createDecompressionContext failed");
    size_t in_size = in.size(), out_size = out.size();
    size_t r = LZ4F_decompress(d_, out.data(), &out_size, in.data(), &in_size, nullptr);
    if (LZ4F_isError(r)) return Corrupt(LZ4F_getErrorName(r));
    if (in_size > 0 || out_size > 0) boundary_ = (r == 0);
    return CodecStep{in_size, out_size};
  }
  bool AtBoundary() const override { return boundary_; }

 private:
  LZ4F_dctx* d_ = nullptr;
  bool ok_ = false;
  bool boundary_ = false;
};

}  // namespace

Result<std::unique_ptr<Codec>> MakeCodec(ImageKind kind) {
  switch (kind) {
    case ImageKind::kGzip: return std::unique_ptr<Codec>(new GzipCodec());
    case ImageKind::kXz: return std::unique_ptr<Codec>(new XzCodec());
    case ImageKind::kZstd: return std::unique_ptr<Codec>(new ZstdCodec());
    case ImageKind::kBzip2: return std::unique_ptr<Codec>(new Bzip2Codec());
    case ImageKind::kLz4: return std::unique_ptr<Codec>(new Lz4Codec());
    default: return InvalidArgument(fmt::format("no decompressor for {} input", KindName(kind)));
  }
}

}  // namespace flashpipe::input
