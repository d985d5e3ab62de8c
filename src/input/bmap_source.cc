// BmapSource: a raw image stream written through its bmap (a seekable file
// goes through BmapFileSource instead). Unmapped ranges are
// skipped (passed over in the input, OnSkip to the sink); each mapped range is
// read, hashed and delivered, and its checksum compared before the next range
// starts, so a bad range stops the write right after itself.
#include <vector>

#include "input/sources.h"

namespace flashpipe::input {
namespace {

class BmapSource : public ImageSource {
 public:
  BmapSource(std::unique_ptr<ByteReader> reader, Bmap bmap, ImageKind compression)
      : reader_(std::move(reader)), bmap_(std::move(bmap)), compression_(compression) {}
  ImageForm form() const override { return {.compression = compression_, .bmap = true}; }
  std::optional<uint64_t> known_size() const override { return bmap_.image_size; }
  uint64_t image_size() const override { return bmap_.image_size; }

  Status Run(ImageSink* sink) override {
    std::optional<Digest> digest;
    if (!bmap_.checksum_type.empty()) {
      FP_ASSIGN_OR_RETURN(digest, Digest::Create(bmap_.checksum_type));
    }
    std::vector<uint8_t> buf(1 << 20);
    uint64_t pos = 0;
    for (size_t i = 0; i < bmap_.ranges.size(); ++i) {
      const BmapRange& r = bmap_.ranges[i];
      FP_RETURN_IF_ERROR(SkipTo(sink, pos, bmap_.RangeBegin(r)));
      pos = bmap_.RangeBegin(r);
      FP_RETURN_IF_ERROR(CopyRange(sink, i, r, buf, digest ? &*digest : nullptr));
      pos = bmap_.RangeEnd(r);
    }
    FP_RETURN_IF_ERROR(SkipTo(sink, pos, bmap_.image_size));
    return sink->OnEnd();
  }

 private:
  std::string RangeName(size_t i, const BmapRange&) const {
    return fmt::format("{}: {}", reader_->name(), bmap_.RangeLabel(i));
  }

  Status SkipTo(ImageSink* sink, uint64_t pos, uint64_t to) {
    if (to <= pos) return Status::Ok();
    FP_ASSIGN_OR_RETURN(uint64_t skipped, reader_->Skip(to - pos));
    if (skipped != to - pos) {
      return Corrupt(fmt::format("{}: image ends at byte {}, before bmap ImageSize {}", reader_->name(),
                                 pos + skipped, bmap_.image_size));
    }
    return sink->OnSkip(pos, to - pos);
  }

  Status CopyRange(ImageSink* sink, size_t i, const BmapRange& r, std::vector<uint8_t>& buf, Digest* digest) {
    uint64_t begin = bmap_.RangeBegin(r), end = bmap_.RangeEnd(r);
    for (uint64_t at = begin; at < end;) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - at));
      FP_ASSIGN_OR_RETURN(size_t got, reader_->ReadUpTo(std::span(buf).first(want)));
      if (got < want) {
        return Corrupt(fmt::format("{}: image ends at byte {}", RangeName(i, r), at + got));
      }
      auto data = std::span<const uint8_t>(buf).first(got);
      if (digest != nullptr) digest->Update(data);
      FP_RETURN_IF_ERROR(sink->OnRaw(at, data));
      at += got;
    }
    if (digest == nullptr) return Status::Ok();
    std::string got = digest->HexFinal();
    if (!r.checksum.empty() && got != r.checksum) {
      return Corrupt(fmt::format("{}: {} mismatch: image has {}, bmap says {}; nothing after this range was written",
                                 RangeName(i, r), bmap_.checksum_type, got, r.checksum));
    }
    return Status::Ok();
  }

  std::unique_ptr<ByteReader> reader_;
  Bmap bmap_;
  ImageKind compression_;
};

}  // namespace

std::unique_ptr<ImageSource> MakeBmapSource(std::unique_ptr<ByteReader> reader, Bmap bmap, ImageKind compression) {
  return std::make_unique<BmapSource>(std::move(reader), std::move(bmap), compression);
}

}  // namespace flashpipe::input
