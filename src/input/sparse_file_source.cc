// SparseFileSource: a seekable sparse file. The decoder sees only headers and
// small payloads; each RAW payload is handed to the sink as file ranges
// (RawFromFd), so it goes from the page cache straight into the writer's
// aligned buffers, and the decoder is told with AdvanceRaw. The file is read
// front to back, so the kernel is asked to read it ahead (ReadAhead) and long
// payloads go in pieces that keep that window moving.
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "base/fd_io.h"
#include "base/read_ahead.h"
#include "input/sources.h"
#include "sparse/format.h"

namespace flashpipe::input {
namespace {

// A read-ahead window over the file for headers and small payloads.
class HeaderWindow {
 public:
  HeaderWindow(int fd, uint64_t file_size) : fd_(fd), file_size_(file_size), buf_(64 << 10) {}
  // Up to n bytes at pos (fewer at the end of the file).
  Result<std::span<const uint8_t>> Get(uint64_t pos, size_t n) {
    n = static_cast<size_t>(std::min<uint64_t>(n, file_size_ > pos ? file_size_ - pos : 0));
    if (n > buf_.size()) buf_.resize(n);
    if (pos < start_ || pos + n > start_ + size_) FP_RETURN_IF_ERROR(Fill(pos, std::max(n, size_t{64} << 10)));
    size_t have = static_cast<size_t>(std::min<uint64_t>(n, start_ + size_ - pos));
    return std::span<const uint8_t>(buf_.data() + (pos - start_), have);
  }

 private:
  Status Fill(uint64_t pos, size_t want) {
    want = std::min(want, buf_.size());
    FP_ASSIGN_OR_RETURN(size_t got, PreadUpTo(fd_, std::span(buf_).first(want), pos, "the image"));
    start_ = pos;
    size_ = got;
    return Status::Ok();
  }
  int fd_;
  uint64_t file_size_;
  std::vector<uint8_t> buf_;
  uint64_t start_ = 0;
  size_t size_ = 0;
};

class SparseFileSource : public ImageSource {
 public:
  SparseFileSource(UniqueFd fd, std::string name, uint64_t file_size, sparse::DecoderOptions options)
      : fd_(std::move(fd)), name_(std::move(name)), file_size_(file_size), options_(options) {
    uint8_t head[sparse::kFileHeaderSize] = {};
    if (PreadExact(fd_.get(), head, 0, name_).ok()) header_ = sparse::ParseFileHeader(head);
  }
  ImageForm form() const override { return {.sparse = true}; }
  std::optional<uint64_t> known_size() const override { return header_.image_size(); }
  uint64_t image_size() const override { return header_.image_size(); }

  Status Run(ImageSink* sink) override {
    Status s = Decode(sink);
    return s.ok() ? s : s.WithContext(name_);
  }

 private:
  Status Decode(ImageSink* sink) {
    sparse::Decoder dec(sink, options_);
    HeaderWindow win(fd_.get(), file_size_);
    ReadAhead ahead(fd_.get(), file_size_);
    uint64_t pos = 0;
    auto feed = [&](size_t n) -> Status {
      FP_ASSIGN_OR_RETURN(auto bytes, win.Get(pos, n));
      pos += bytes.size();
      return dec.Feed(bytes);
    };
    FP_RETURN_IF_ERROR(feed(std::max<size_t>(sparse::kFileHeaderSize, header_.file_hdr_sz)));
    uint64_t chunk_end = pos;  // end of the current non-RAW chunk
    while (!dec.finished() && pos < file_size_) {
      ahead.At(pos);
      if (dec.raw_pending() > 0) {
        // A file cut inside the payload: hand over what is there and let the
        // decoder's Finish() name the chunk and offset, as simg2img does.
        uint64_t n = std::min({dec.raw_pending(), file_size_ - pos, ReadAhead::kPiece});
        FP_ASSIGN_OR_RETURN(uint32_t crc, sink->RawFromFd(dec.raw_output_offset(), fd_.get(), pos, n));
        FP_RETURN_IF_ERROR(dec.AdvanceRaw(n, crc));
        pos += n;
        chunk_end = pos;
      } else if (pos < chunk_end) {
        FP_RETURN_IF_ERROR(feed(static_cast<size_t>(std::min<uint64_t>(chunk_end - pos, 64 << 10))));
      } else {
        FP_ASSIGN_OR_RETURN(auto bytes, win.Get(pos, header_.chunk_hdr_sz));
        if (bytes.size() < sparse::kChunkHeaderSize) {
          FP_RETURN_IF_ERROR(feed(bytes.size()));
          break;
        }
        sparse::ChunkHeader ch = sparse::ParseChunkHeader(bytes);
        // RAW: stop after the header so that the payload goes zero-copy.
        uint64_t size = ch.chunk_type == sparse::kChunkRaw ? header_.chunk_hdr_sz
                                                            : std::max<uint64_t>(ch.total_sz, header_.chunk_hdr_sz);
        chunk_end = pos + size;
        FP_RETURN_IF_ERROR(feed(static_cast<size_t>(std::min<uint64_t>(size, 64 << 10))));
      }
    }
    if (dec.finished() && pos < file_size_) FP_RETURN_IF_ERROR(feed(1));  // trailing data: the decoder's call
    return dec.Finish();
  }

  UniqueFd fd_;
  std::string name_;
  uint64_t file_size_;
  sparse::DecoderOptions options_;
  sparse::FileHeader header_;
};

}  // namespace

std::unique_ptr<ImageSource> MakeSparseFileSource(UniqueFd fd, std::string name, uint64_t file_size,
                                                  sparse::DecoderOptions options) {
  return std::make_unique<SparseFileSource>(std::move(fd), std::move(name), file_size, options);
}

}  // namespace flashpipe::input
