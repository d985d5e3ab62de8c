#include "sparse/decode_fd.h"

#include <unistd.h>

#include <cerrno>

#include "base/aligned_buffer.h"

namespace flashpipe::sparse {

Status DecodeFd(int fd, Sink& sink, DecoderOptions options, std::string_view name) {
  AlignedBuffer buf(kDecodeFdBufferSize);
  Decoder decoder(&sink, options);
  uint64_t offset = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(fmt::format("read {} at byte 0x{:x}", name, offset));
    }
    if (n == 0) break;
    offset += static_cast<uint64_t>(n);
    FP_RETURN_IF_ERROR(decoder.Feed({buf.data(), static_cast<size_t>(n)}));
  }
  return decoder.Finish();
}

}  // namespace flashpipe::sparse
