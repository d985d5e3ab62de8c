#include "sparse/decode_fd.h"

#include <algorithm>

#include "base/aligned_buffer.h"
#include "base/fd_io.h"

namespace flashpipe::sparse {
namespace {

constexpr size_t kWalkBuffer = size_t{64} << 10;

struct HeaderSink : NullSink {
  Status OnHeader(const FileHeader& h) override {
    header = h;
    return Status::Ok();
  }
  FileHeader header;
};

}  // namespace

Status DecodeFd(int fd, Sink& sink, DecoderOptions options, std::string_view name, std::span<const uint8_t> head) {
  Decoder decoder(&sink, options);
  FP_RETURN_IF_ERROR(decoder.Feed(head));
  AlignedBuffer buf(kDecodeFdBufferSize);
  uint64_t offset = head.size();
  for (;;) {
    FP_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd, {buf.data(), buf.size()}, name, offset));
    offset += n;
    FP_RETURN_IF_ERROR(decoder.Feed({buf.data(), n}));
    if (n < buf.size()) break;  // end of file
  }
  return decoder.Finish();
}

Result<uint64_t> DecodeAhead(ReadAhead& in, Sink& sink, DecoderOptions options, std::span<const uint8_t> head) {
  Decoder decoder(&sink, options);
  FP_RETURN_IF_ERROR(decoder.Feed(head));
  for (;;) {
    FP_ASSIGN_OR_RETURN(ReadAhead::Piece piece, in.Next());
    if (piece.data.empty()) {
      FP_RETURN_IF_ERROR(decoder.Finish());
      return piece.offset;
    }
    FP_RETURN_IF_ERROR(decoder.Feed(piece.data));
  }
}

Result<FileHeader> ReadHeader(int fd, std::string_view name, std::vector<uint8_t>* head) {
  uint8_t bytes[kFileHeaderSize];
  FP_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd, bytes, name, head->size()));
  head->insert(head->end(), bytes, bytes + n);
  HeaderSink sink;
  Decoder decoder(&sink, {.check_crc = false});
  FP_RETURN_IF_ERROR(decoder.Feed(*head));
  if (!decoder.header_parsed()) return decoder.Finish();  // too short: the decoder's own message
  return sink.header;
}

Result<FileHeader> CheckSparseFile(int fd, uint64_t start, uint64_t size, std::string_view name) {
  HeaderSink sink;
  Decoder decoder(&sink, {.check_crc = false});
  std::vector<uint8_t> buf(kWalkBuffer);
  uint64_t pos = start;
  while (pos < size) {
    if (uint64_t skip = std::min(decoder.raw_pending(), size - pos); skip > 0) {
      FP_RETURN_IF_ERROR(decoder.AdvanceRaw(skip, 0));
      pos += skip;
      continue;
    }
    FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd, {buf.data(), std::min<uint64_t>(buf.size(), size - pos)}, pos, name));
    if (n == 0) break;  // the file shrank under us: the decoder reports the truncation
    FP_RETURN_IF_ERROR(decoder.Feed({buf.data(), n}));
    pos += n;
  }
  FP_RETURN_IF_ERROR(decoder.Finish());
  return sink.header;
}

}  // namespace flashpipe::sparse
