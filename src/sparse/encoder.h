// Encoder: turns a raw image into a sparse image, as AOSP img2simg does.
//
// Each block whose 32-bit words are all equal becomes FILL (zero blocks
// included, as AOSP does: a device then writes them, which is what a flasher
// of a "raw" image expects); other blocks become RAW; adjacent blocks of the
// same kind merge (RAW chunks are capped at max_raw_chunk bytes, as upstream
// libsparse caps them at 64 MiB). A partial last block is padded with zeros.
// With `holes`, ranges the input file does not store (SEEK_DATA/SEEK_HOLE,
// rounded inward to whole blocks) become DONT_CARE and are not read. With
// `crc`, a final CRC32 chunk holds the correct CRC-32 of the whole expanded
// image (off by default: some bootloaders reject CRC32 chunks).
//
// One pass, the input read ahead in large pieces on threads of their own
// (sparse/read_ahead.h) and RAW payload written straight from those pieces;
// the RAW chunk headers and the file header's counts are patched in place
// once known (EncodeToPath writes through a WriteBehindOutput, so the output
// is written on a thread of its own too). That needs a seekable
// output; for a pipe or callback output the input must be seekable instead,
// and the encoder makes a first pass that only plans the chunks. Memory is
// fixed, except the plan: 4 bytes per RAW chunk, non-seekable outputs only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "sparse/read_ahead.h"
#include "sparse/writer.h"

namespace flashpipe::sparse {

struct EncoderOptions {
  uint32_t block_size = 4096;  // a non-zero multiple of 4
  bool holes = false;          // img2simg -s
  bool crc = false;            // append a CRC32 chunk
  uint64_t max_raw_chunk = uint64_t{64} << 20;
  ReadAheadOptions read_ahead;  // how the input is read (tests use small pieces)
};

struct EncodeStats {
  uint64_t input_bytes = 0;
  uint32_t total_blks = 0;
  uint32_t total_chunks = 0;
  uint64_t output_bytes = 0;
  uint32_t crc = 0;  // of the expanded image, when options.crc
};

// Reads `in_fd` to EOF (from offset 0 when it is seekable, else from where it
// is) and writes the sparse image to `out`. `in_name` names it in errors.
// Starts with CheckEncodable.
Result<EncodeStats> EncodeImage(int in_fd, std::string_view in_name, Output& out, const EncoderOptions& options);

// What EncodeImage refuses before it writes a byte: a bad block size, an
// empty seekable input, -s on a stream, a stream to a stream.
Status CheckEncodable(int in_fd, std::string_view in_name, bool output_seekable, const EncoderOptions& options);

// img2simg: `in_path` ("-": stdin) to `out_path` ("-": stdout), through
// sparse/files.h. Every check (the input opens and is not empty, the output
// is not the input, CheckEncodable) comes before the output is created; a
// regular-file output appears only when complete.
Result<EncodeStats> EncodeToPath(const std::string& in_path, const std::string& out_path,
                                 const EncoderOptions& options);

// True when every 32-bit word of `block` equals the first; sets *pattern.
// REQUIRES: block.size() is a non-zero multiple of 4.
bool IsUniformBlock(std::span<const uint8_t> block, uint32_t* pattern);

}  // namespace flashpipe::sparse
