// DecodeFd: reads a sparse image from a file descriptor (file, pipe, socket)
// with large reads into one fixed buffer and feeds it to a Decoder, then
// calls Finish(). Memory is the buffer only, whatever the image size.
#pragma once

#include <cstddef>
#include <string_view>

#include "base/status.h"
#include "sparse/decoder.h"
#include "sparse/sink.h"

namespace flashpipe::sparse {

inline constexpr size_t kDecodeFdBufferSize = size_t{4} << 20;

// Reads `fd` to EOF from its current position. Read errors name `name`
// ("read /tmp/x.simg at byte 0x1000: Input/output error"); decoder errors are
// returned as they are (they carry the chunk index and input offset).
Status DecodeFd(int fd, Sink& sink, DecoderOptions options, std::string_view name = "sparse input");

}  // namespace flashpipe::sparse
