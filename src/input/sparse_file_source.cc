// SparseFileSource: a seekable sparse file, read front to back by
// sparse::ReadAhead (pieces read on threads, O_DIRECT where the file is not
// in the page cache) and fed to the decoder, which hands RAW payloads to the
// sink as slices of those pieces. The disk reads the next pieces while the
// writer waits on its device: a cold image read by the writer's own blocking
// pread calls left the device queue empty during each.
#include <unistd.h>

#include "base/fd_io.h"
#include "input/sources.h"
#include "sparse/format.h"
#include "sparse/read_ahead.h"

namespace flashpipe::input {
namespace {

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
