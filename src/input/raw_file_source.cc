// RawFileSource: a seekable raw image. Its data extents, found with
// SEEK_DATA/SEEK_HOLE, are read ahead by sparse::ReadAhead (threads, O_DIRECT
// unless cached) and go to the sink as RAW; the holes between them read as
// zeros by definition and go as zero FILL. No data block is inspected, so the
// result is the file's bytes exactly.
#include <sys/stat.h>
#include <unistd.h>

#include "input/sources.h"
#include "sparse/read_ahead.h"

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
    uint64_t next = 0;  // where the reader thread looks for the next extent
    sparse::RangeSource extents = [this, next]() mutable -> Result<std::optional<sparse::ByteRange>> {
      uint64_t data = NextData(next);
      if (data >= size_) return std::optional<sparse::ByteRange>();
      next = NextHole(data);
      return std::optional<sparse::ByteRange>(sparse::ByteRange{data, next - data});
    };
    sparse::ReadAhead in(fd_.get(), name_, std::move(extents), FileReadAhead());
    uint64_t pos = 0;
    for (;;) {
      FP_ASSIGN_OR_RETURN(sparse::ReadAhead::Piece piece, in.Next());
      if (piece.data.empty()) break;
      if (piece.offset > pos) FP_RETURN_IF_ERROR(Hole(sink, pos, piece.offset));
      FP_RETURN_IF_ERROR(sink->OnRaw(piece.offset, piece.data));
      pos = piece.offset + piece.data.size();
    }
    // Pieces end early at end of file: a file cut while it was read is an
    // error, never zeros; past the last extent, a hole to the end.
    struct stat st;
    if (pos < size_ && ::fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) < size_) {
      return Corrupt(fmt::format("the file ends at byte 0x{:x}, not 0x{:x} as when it was opened: changed while read",
                                 st.st_size, size_));
    }
    if (pos < size_) FP_RETURN_IF_ERROR(Hole(sink, pos, size_));
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
  // FILL lengths are multiples of 4; an odd tail goes as RAW zeros.
  Status Hole(ImageSink* sink, uint64_t begin, uint64_t end) {
    static constexpr uint8_t kZeros[4] = {};
    uint64_t fill = (end - begin) & ~uint64_t{3};
    if (fill > 0) FP_RETURN_IF_ERROR(sink->OnFill(begin, fill, 0));
    if (begin + fill < end) FP_RETURN_IF_ERROR(sink->OnRaw(begin + fill, {kZeros, end - begin - fill}));
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
