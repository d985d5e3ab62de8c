#include "host/verify.h"

#include <algorithm>
#include <array>

#include "base/endian.h"
#include "base/sha256.h"
#include "input/image_source.h"

namespace flashpipe::host {
namespace {

// Hashes the image's defined bytes, one digest per run of consecutive ones.
class DigestSink : public input::ImageSink {
 public:
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override {
    FP_RETURN_IF_ERROR(At(offset, data.size()));
    hash_.Update(data);
    return Status::Ok();
  }
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override {
    FP_RETURN_IF_ERROR(At(offset, length));
    if (pattern == 0) {
      hash_.UpdateZeros(length);
      return Status::Ok();
    }
    std::array<uint8_t, 64 << 10> buf;
    for (size_t i = 0; i < buf.size(); i += 4) StoreLE<uint32_t>(buf.data() + i, pattern);
    for (uint64_t left = length; left > 0;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
      hash_.Update(std::span<const uint8_t>(buf.data(), n));
      left -= n;
    }
    return Status::Ok();
  }
  Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }

  std::vector<DigestRange> Finish() {
    Close();
    return std::move(ranges_);
  }

 private:
  // Bytes at `offset`: they continue the open range or start a new one.
  Status At(uint64_t offset, uint64_t length) {
    if (open_ && offset < end_) {
      return Unsupported(fmt::format("--verify: the image writes byte {} twice (overlaid parts)", offset));
    }
    if (!open_ || offset != end_) {
      Close();
      open_ = true;
      start_ = offset;
    }
    end_ = offset + length;
    return Status::Ok();
  }
  void Close() {
    if (open_ && end_ > start_) ranges_.push_back({start_, end_ - start_, Sha256::Hex(hash_.Final())});
    open_ = false;
  }

  Sha256 hash_;
  bool open_ = false;
  uint64_t start_ = 0, end_ = 0;
  std::vector<DigestRange> ranges_;
};

}  // namespace

Result<std::vector<DigestRange>> ImageDigests(const ImageSpec& spec) {
  if (!Rereadable(spec)) return InvalidArgument(fmt::format("--verify: '{}' cannot be read a second time", spec.path));
  input::SourceOptions options;
  options.bmap_path = spec.bmap;
  FP_ASSIGN_OR_RETURN(auto source, input::OpenImage(spec.path, options));
  if (source->form().parts > 0) return Unsupported(fmt::format("--verify: '{}' is overlaid parts", spec.path));
  DigestSink sink;
  FP_RETURN_IF_ERROR(source->Run(&sink));
  return sink.Finish();
}

std::string DigestFromInfo(const std::vector<std::string>& lines) {
  std::string first, second;
  for (const std::string& l : lines) {
    if (l.starts_with("sha256 1/2 ")) first = l.substr(11);
    if (l.starts_with("sha256 2/2 ")) second = l.substr(11);
  }
  if (first.size() != 32 || second.size() != 32) return "";
  return first + second;
}

Status VerifyOnDevice(FastbootClient& client, const std::string& partition, const std::vector<DigestRange>& ranges,
                      bool* unavailable) {
  *unavailable = false;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const DigestRange& r = ranges[i];
    std::vector<std::string> info;
    Status st = client.Command(fmt::format("oem digest {}:{}:{}", partition, r.offset, r.size), &info).status();
    if (!st.ok()) {
      *unavailable = i == 0 && client.refused();
      return st;
    }
    std::string got = DigestFromInfo(info);
    if (got.empty()) {
      *unavailable = i == 0;
      return ProtocolError(
          fmt::format("oem digest {}:{}:{}: no sha256 lines in the answer", partition, r.offset, r.size));
    }
    if (got != r.sha256) {
      return Mismatch(fmt::format("verify: {} bytes {}..{}: the device has sha256 {}, the image {}", partition,
                                  r.offset, r.offset + r.size, got, r.sha256));
    }
  }
  return Status::Ok();
}

}  // namespace flashpipe::host
