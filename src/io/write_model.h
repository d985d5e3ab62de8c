// WriteModel: which WriteSink puts an image on storage, as a value that
// commands pass down instead of flags (`flashpipe serve --write-model`):
//   pipelined  io::ImageWriter, the engine (the default; production)
//   bounce:N   io::BounceWriter with a bounce buffer of N logical blocks
//              (U-Boot's sparse writer: N = 100 before b1aade87ca1, 16384
//              after), one blocking request at a time
//   discard    io::DiscardWriter: validate, write nothing (the transfer's
//              cost alone)
// The two models besides the engine exist to measure it against (see
// docs/bench.md); they are never a default.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "io/image_writer.h"
#include "io/write_sink.h"

namespace flashpipe::io {

enum class WriteModelKind { kPipelined, kBounce, kDiscard };

struct WriteModel {
  WriteModelKind kind = WriteModelKind::kPipelined;
  uint32_t bounce_blocks = 0;  // kBounce: 1..kMaxBounceBlocks
};
inline constexpr uint32_t kMaxBounceBlocks = 1u << 20;

// "pipelined", "bounce:N" or "discard"; errors name the text and the choices.
Result<WriteModel> ParseWriteModel(std::string_view text);
// The spelling ParseWriteModel takes ("bounce:100").
std::string WriteModelName(const WriteModel& model);

// The sink for `model` writing onto `device`. The engine gets `options`
// whole; the bounce model only its sync; discard needs none.
Result<std::unique_ptr<WriteSink>> MakeWriteSink(const WriteModel& model, const Device& device,
                                                 const WriterOptions& options);

}  // namespace flashpipe::io
