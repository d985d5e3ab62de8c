// RawFileSource: a seekable raw image. Data extents go to the sink as file
// ranges (zero-copy RawFromFd), in pieces with the kernel asked to read ahead
// of them (ReadAhead); holes, found with SEEK_DATA/SEEK_HOLE, read as zeros by
// definition and go as zero FILL. No data block is inspected, so the result
// is the file's bytes exactly.
#include <unistd.h>

#include <algorithm>

#include "base/read_ahead.h"
#include "input/sources.h"

namespace flashpipe::input {
namespace {

class RawFileSource : public ImageSource {
 public:
  RawFileSource(UniqueFd fd, std::string name, uint64_t size)
      : fd_(std::move(fd)), name_(std::move(name)), size_(size) {}
  ImageForm form() const override { return {}; }
  std::optional<uint64_t> known_size() const override { return size_; }
  uint64_t image_size() const override { return size_; }

  Status Run(ImageSink* sink) override {
    Status s = Copy(sink);
    return s.ok() ? s : s.WithContext(name_);
  }

 private:
  Status Copy(ImageSink* sink) {
    ReadAhead ahead(fd_.get(), size_);
    uint64_t pos = 0;
    while (pos < size_) {
      uint64_t data = NextData(pos);
      if (data > pos) {
        FP_RETURN_IF_ERROR(Hole(sink, pos, data));
        pos = data;
        continue;
      }
      uint64_t n = std::min(NextHole(pos) - pos, ReadAhead::kPiece);
      ahead.At(pos);
      FP_ASSIGN_OR_RETURN(uint32_t crc, sink->RawFromFd(pos, fd_.get(), pos, n));
      (void)crc;
      pos += n;
    }
    return sink->OnEnd();
  }

  // SEEK_DATA/SEEK_HOLE where supported; else the whole file is data.
  uint64_t NextData(uint64_t pos) {
    off_t r = ::lseek(fd_.get(), static_cast<off_t>(pos), SEEK_DATA);
    if (r < 0) return errno == ENXIO ? size_ : pos;
    return std::min<uint64_t>(static_cast<uint64_t>(r), size_);
  }
  uint64_t NextHole(uint64_t pos) {
    off_t r = ::lseek(fd_.get(), static_cast<off_t>(pos), SEEK_HOLE);
    if (r < 0 || static_cast<uint64_t>(r) <= pos) return size_;
    return std::min<uint64_t>(static_cast<uint64_t>(r), size_);
  }
  // FILL lengths are multiples of 4; an odd tail is read as data (zeros).
  Status Hole(ImageSink* sink, uint64_t begin, uint64_t end) {
    uint64_t fill = (end - begin) & ~uint64_t{3};
    if (fill > 0) FP_RETURN_IF_ERROR(sink->OnFill(begin, fill, 0));
    if (begin + fill < end) {
      FP_ASSIGN_OR_RETURN(uint32_t crc, sink->RawFromFd(begin + fill, fd_.get(), begin + fill, end - begin - fill));
      (void)crc;
    }
    return Status::Ok();
  }

  UniqueFd fd_;
  std::string name_;
  uint64_t size_;
};

}  // namespace

std::unique_ptr<ImageSource> MakeRawFileSource(UniqueFd fd, std::string name, uint64_t size) {
  return std::make_unique<RawFileSource>(std::move(fd), std::move(name), size);
}

}  // namespace flashpipe::input
