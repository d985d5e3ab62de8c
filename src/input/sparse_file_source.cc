// SparseFileSource: a seekable sparse file, read front to back by
// sparse::ReadAhead (pieces read on threads, O_DIRECT where the file is not
// in the page cache) and fed to the decoder, which hands RAW payloads to the
// sink as slices of those pieces. The disk reads the next pieces while the
// writer waits on its device: a cold image read by the writer's own blocking
// pread calls left the device queue empty during each.
//
// By range (raw_by_range): only headers and non-RAW chunks are read here,
// through a small window; each RAW payload goes to the sink as a file range
// (RawFromFd) and the decoder is told with AdvanceRaw. A sink that preads
// the range into its own memory pays one copy, and one that does not need
// the payload (a planning pass) reads only the headers.
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "base/fd_io.h"
#include "input/sources.h"
#include "sparse/format.h"
#include "sparse/read_ahead.h"

namespace flashpipe::input {
namespace {

constexpr size_t kHeaderWindow = 64 << 10;
constexpr uint64_t kRangePiece = 4 << 20;

// Reads headers and small chunks through one buffer, from the page cache.
class HeaderWindow {
 public:
  HeaderWindow(int fd, uint64_t file_size) : fd_(fd), file_size_(file_size), buf_(kHeaderWindow) {}
  // Up to n (<= kHeaderWindow) bytes at pos; fewer at the end of the file.
  Result<std::span<const uint8_t>> Get(uint64_t pos, size_t n) {
    n = static_cast<size_t>(std::min<uint64_t>(n, file_size_ > pos ? file_size_ - pos : 0));
    if (pos < start_ || pos + n > start_ + size_) {
      FP_ASSIGN_OR_RETURN(size_, PreadUpTo(fd_, buf_, pos, "the image"));
      start_ = pos;
    }
    size_t have = static_cast<size_t>(std::min<uint64_t>(n, start_ + size_ - pos));
    return std::span<const uint8_t>(buf_.data() + (pos - start_), have);
  }

 private:
  int fd_;
  uint64_t file_size_;
  std::vector<uint8_t> buf_;
  uint64_t start_ = 0;
  size_t size_ = 0;
};

class SparseFileSource : public ImageSource {
 public:
  SparseFileSource(UniqueFd fd, std::string name, uint64_t file_size, sparse::DecoderOptions options,
                   bool raw_by_range)
      : fd_(std::move(fd)), name_(std::move(name)), file_size_(file_size), options_(options),
        raw_by_range_(raw_by_range) {
    uint8_t head[sparse::kFileHeaderSize] = {};
    if (PreadExact(fd_.get(), head, 0, name_).ok()) header_ = sparse::ParseFileHeader(head);
  }
  ImageForm form() const override { return {.sparse = true}; }
  std::optional<uint64_t> known_size() const override { return header_.image_size(); }
  uint64_t image_size() const override { return header_.image_size(); }

  Status Run(ImageSink* sink) override {
    Status s = raw_by_range_ ? DecodeByRange(sink) : Decode(sink);
    return s.ok() ? s : s.WithContext(name_);
  }

 private:
  // Every byte goes to the decoder, trailing data too (its error).
  Status Decode(ImageSink* sink) {
    sparse::Decoder dec(sink, options_);
    sparse::ReadAhead in(fd_.get(), name_, sparse::ReadAhead::OneRange(0, file_size_), FileReadAhead());
    for (;;) {
      FP_ASSIGN_OR_RETURN(sparse::ReadAhead::Piece piece, in.Next());
      if (piece.data.empty()) break;
      FP_RETURN_IF_ERROR(dec.Feed(piece.data));
    }
    return dec.Finish();
  }

  Status DecodeByRange(ImageSink* sink) {
    sparse::Decoder dec(sink, options_);
    HeaderWindow win(fd_.get(), file_size_);
    uint64_t pos = 0;
    auto feed = [&](size_t n) -> Status {
      FP_ASSIGN_OR_RETURN(auto bytes, win.Get(pos, n));
      pos += bytes.size();
      return dec.Feed(bytes);
    };
    FP_RETURN_IF_ERROR(feed(std::max<size_t>(sparse::kFileHeaderSize, header_.file_hdr_sz)));
    uint64_t chunk_end = pos;  // end of the current non-RAW chunk
    while (!dec.finished() && pos < file_size_) {
      if (dec.raw_pending() > 0) {
        // A file cut inside the payload: what is there goes over, and the
        // decoder's Finish() names the chunk and offset.
        uint64_t n = std::min({dec.raw_pending(), file_size_ - pos, kRangePiece});
        FP_ASSIGN_OR_RETURN(uint32_t crc, sink->RawFromFd(dec.raw_output_offset(), fd_.get(), pos, n));
        FP_RETURN_IF_ERROR(dec.AdvanceRaw(n, crc));
        pos += n;
        chunk_end = pos;
      } else if (pos < chunk_end) {
        FP_RETURN_IF_ERROR(feed(static_cast<size_t>(std::min<uint64_t>(chunk_end - pos, kHeaderWindow))));
      } else {
        FP_ASSIGN_OR_RETURN(auto bytes, win.Get(pos, header_.chunk_hdr_sz));
        if (bytes.size() < sparse::kChunkHeaderSize) {
          FP_RETURN_IF_ERROR(feed(bytes.size()));
          break;
        }
        sparse::ChunkHeader ch = sparse::ParseChunkHeader(bytes);
        // RAW: stop after the header, so that the payload goes by range.
        uint64_t size = ch.chunk_type == sparse::kChunkRaw ? header_.chunk_hdr_sz
                                                            : std::max<uint64_t>(ch.total_sz, header_.chunk_hdr_sz);
        chunk_end = pos + size;
        FP_RETURN_IF_ERROR(feed(static_cast<size_t>(std::min<uint64_t>(size, kHeaderWindow))));
      }
    }
    if (dec.finished() && pos < file_size_) FP_RETURN_IF_ERROR(feed(1));  // trailing data: the decoder's call
    return dec.Finish();
  }

  UniqueFd fd_;
  std::string name_;
  uint64_t file_size_;
  sparse::DecoderOptions options_;
  bool raw_by_range_;
  sparse::FileHeader header_;
};

}  // namespace

std::unique_ptr<ImageSource> MakeSparseFileSource(UniqueFd fd, std::string name, uint64_t file_size,
                                                  sparse::DecoderOptions options, bool raw_by_range) {
  return std::make_unique<SparseFileSource>(std::move(fd), std::move(name), file_size, options, raw_by_range);
}

}  // namespace flashpipe::input
