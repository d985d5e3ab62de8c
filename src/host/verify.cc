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

namespace {

constexpr uint64_t kDefaultFetch = 256 << 20;  // fastbootd's max-download-size
constexpr uint64_t kMaxFetch = 1 << 30;

std::string RangeName(const std::string& partition, const DigestRange& r) {
  return fmt::format("{} bytes {}..{}", partition, r.offset, r.offset + r.size);
}

// Step 1. *fell_back: the device has no oem digest (nothing was checked).
Status ByDigest(FastbootClient& client, const std::string& partition, const std::vector<DigestRange>& ranges,
                bool* fell_back, std::string* why) {
  *fell_back = false;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const DigestRange& r = ranges[i];
    std::vector<std::string> info;
    std::string command = fmt::format("oem digest {}:{}:{}", partition, r.offset, r.size);
    Status st = client.Command(command, &info).status();
    if (!st.ok()) {
      if (i == 0 && client.refused()) {
        *fell_back = true;
        *why = "oem digest: " + st.message();
        return Status::Ok();
      }
      return st.WithContext(command);
    }
    std::string got = DigestFromInfo(info);
    if (got.empty()) {
      if (i == 0) {
        *fell_back = true;
        *why = "oem digest: no sha256 lines in the answer";
        return Status::Ok();
      }
      return ProtocolError(fmt::format("{}: no sha256 lines in the answer", command));
    }
    if (got != r.sha256) {
      return Mismatch(fmt::format("verify: {}: the device has sha256 {}, the image {}", RangeName(partition, r), got,
                                  r.sha256));
    }
  }
  return Status::Ok();
}

// Step 2. *fell_back: the device (or the link) has no read-back.
Status ByReadback(FastbootClient& client, const std::string& partition, const std::vector<DigestRange>& ranges,
                  bool* fell_back, std::string* why) {
  *fell_back = false;
  if (!client.can_fetch()) {
    *fell_back = true;
    *why = fmt::format("fetch: {} cannot read data from a device yet", client.name());
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(uint32_t limit, FetchLimit(client));
  Sha256 hash;
  bool first = true;
  for (const DigestRange& r : ranges) {
    for (uint64_t done = 0; done < r.size;) {
      uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(r.size - done, limit));
      Status st = client.Fetch(partition, r.offset + done, n, [&](std::span<const uint8_t> piece) {
        hash.Update(piece);
        return Status::Ok();
      });
      if (!st.ok() && first && client.refused() && st.code() == Code::kUnsupported) {  // FAIL to the command
        *fell_back = true;
        *why = "fetch: " + st.message();
        return Status::Ok();
      }
      FP_RETURN_IF_ERROR(st.WithContext(fmt::format("verify: reading back {}", RangeName(partition, r))));
      first = false;
      done += n;
    }
    std::string got = Sha256::Hex(hash.Final());
    if (got != r.sha256) {
      return Mismatch(fmt::format("verify: {}: read back sha256 {}, the image {}", RangeName(partition, r), got,
                                  r.sha256));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<uint32_t> FetchLimit(FastbootClient& client) {
  uint64_t limit = 0;
  for (const char* var : {"max-fetch-size", "max-download-size"}) {
    auto v = client.GetVar(var);
    if (!v.ok() && client.refused()) continue;
    FP_RETURN_IF_ERROR(v.status());
    if (v->empty()) continue;  // an OKAY without a value: as unknown
    FP_ASSIGN_OR_RETURN(limit, ParseDeviceSize(var, *v));
    if (limit > 0) break;
  }
  if (limit == 0) limit = kDefaultFetch;
  return static_cast<uint32_t>(std::min(limit, kMaxFetch));
}

Status VerifyOnDevice(FastbootClient& client, const std::string& partition, const std::vector<DigestRange>& ranges,
                      VerifyResult* result) {
  *result = {};
  if (ranges.empty()) return Status::Ok();
  bool fell_back = false;
  std::string no_digest, no_readback;
  result->method = "digest";
  FP_RETURN_IF_ERROR(ByDigest(client, partition, ranges, &fell_back, &no_digest));
  if (!fell_back) return Status::Ok();
  result->method = "readback";
  FP_RETURN_IF_ERROR(ByReadback(client, partition, ranges, &fell_back, &no_readback));
  if (!fell_back) return Status::Ok();
  result->method.clear();
  result->unavailable = no_digest + "; " + no_readback;
  return Status::Ok();
}

}  // namespace flashpipe::host
