// BmapFileSource: a seekable raw file written through its bmap. Each mapped
// range goes to the sink zero-copy (RawFromFd) while a helper thread hashes
// the same bytes from the page cache; the checksum is compared before the next
// range starts, so a bad range stops the write right after itself (as in
// BmapSource, which copies and hashes on one thread).
#include <unistd.h>

#include <future>
#include <vector>

#include "base/fd_io.h"
#include "input/sources.h"

namespace flashpipe::input {
namespace {

// Ranges below this are hashed inline: a thread costs more than the hash.
constexpr uint64_t kAsyncHash = 1 << 20;

Result<std::string> HashRange(int fd, const std::string& type, uint64_t begin, uint64_t end) {
  FP_ASSIGN_OR_RETURN(Digest d, Digest::Create(type));
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(end - begin, 1 << 20)));
  for (uint64_t at = begin; at < end;) {
    auto piece = std::span(buf).first(static_cast<size_t>(std::min<uint64_t>(buf.size(), end - at)));
    FP_ASSIGN_OR_RETURN(size_t r, PreadUpTo(fd, piece, at, "the image"));
    if (r == 0) return Corrupt(fmt::format("image ends at byte {:#x}", at));
    d.Update(piece.first(r));
    at += r;
  }
  return d.HexFinal();
}

class BmapFileSource : public ImageSource {
 public:
  BmapFileSource(UniqueFd fd, std::string name, Bmap bmap, RangeWait wait)
      : fd_(std::move(fd)), name_(std::move(name)), bmap_(std::move(bmap)), wait_(std::move(wait)) {}
  ImageForm form() const override { return {.bmap = true}; }
  std::optional<uint64_t> known_size() const override { return bmap_.image_size; }
  uint64_t image_size() const override { return bmap_.image_size; }

  Status Run(ImageSink* sink) override {
    uint64_t pos = 0;
    for (size_t i = 0; i < bmap_.ranges.size(); ++i) {
      uint64_t begin = bmap_.RangeBegin(bmap_.ranges[i]);
      if (begin > pos) FP_RETURN_IF_ERROR(sink->OnSkip(pos, begin - pos));
      Status s = CopyRange(sink, i);
      if (!s.ok()) return s.WithContext(fmt::format("{}: {}", name_, bmap_.RangeLabel(i)));
      pos = bmap_.RangeEnd(bmap_.ranges[i]);
    }
    if (bmap_.image_size > pos) FP_RETURN_IF_ERROR(sink->OnSkip(pos, bmap_.image_size - pos));
    return sink->OnEnd();
  }

 private:
  Status CopyRange(ImageSink* sink, size_t i) {
    const BmapRange& r = bmap_.ranges[i];
    uint64_t begin = bmap_.RangeBegin(r), end = bmap_.RangeEnd(r);
    bool check = !r.checksum.empty() && !bmap_.checksum_type.empty();
    if (wait_) FP_RETURN_IF_ERROR(wait_(begin, end));
    std::future<Result<std::string>> hash;
    if (check && end - begin >= kAsyncHash) {
      hash = std::async(std::launch::async, HashRange, fd_.get(), bmap_.checksum_type, begin, end);
    }
    auto copied = sink->RawFromFd(begin, fd_.get(), begin, end - begin);
    Result<std::string> got = hash.valid() ? hash.get()
                              : check     ? HashRange(fd_.get(), bmap_.checksum_type, begin, end)
                                          : Result<std::string>(std::string());
    FP_RETURN_IF_ERROR(copied.status());
    FP_RETURN_IF_ERROR(got.status());
    if (check && *got != r.checksum) {
      return Corrupt(fmt::format("{} mismatch: image has {}, bmap says {}; nothing after this range was written",
                                 bmap_.checksum_type, *got, r.checksum));
    }
    return Status::Ok();
  }

  UniqueFd fd_;
  std::string name_;
  Bmap bmap_;
  RangeWait wait_;
};

}  // namespace

Status CheckFirstBmapRange(int fd, const std::string& name, const Bmap& bmap) {
  constexpr uint64_t kMaxPrecheck = 64 << 20;
  if (bmap.ranges.empty() || bmap.checksum_type.empty() || bmap.ranges.front().checksum.empty()) return Status::Ok();
  uint64_t begin = bmap.RangeBegin(bmap.ranges.front()), end = bmap.RangeEnd(bmap.ranges.front());
  if (end - begin > kMaxPrecheck) return Status::Ok();
  FP_ASSIGN_OR_RETURN(std::string got, HashRange(fd, bmap.checksum_type, begin, end));
  if (got == bmap.ranges.front().checksum) return Status::Ok();
  return Corrupt(fmt::format("{}: {}: {} mismatch: image has {}, bmap says {}; nothing written", name,
                             bmap.RangeLabel(0), bmap.checksum_type, got, bmap.ranges.front().checksum));
}

std::unique_ptr<ImageSource> MakeBmapFileSource(UniqueFd fd, std::string name, Bmap bmap, RangeWait wait) {
  return std::make_unique<BmapFileSource>(std::move(fd), std::move(name), std::move(bmap), std::move(wait));
}

}  // namespace flashpipe::input
