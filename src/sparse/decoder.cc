#include "sparse/decoder.h"

#include <algorithm>
#include <cstring>

#include "base/crc32.h"
#include "base/endian.h"

namespace flashpipe::sparse {
namespace {

// Past this many output bytes Crc32AppendPattern's precondition fails, so the
// decoder stops tracking the CRC (no real image gets near it).
constexpr uint64_t kCrcTrackLimit = uint64_t{1} << 60;

enum class Phase : uint8_t {
  kFileHeader,   // collecting the 28 fixed header bytes
  kSkipExtra,    // skipping the extra bytes of a larger file or chunk header
  kChunkHeader,  // collecting the 12 fixed chunk header bytes
  kRawData,      // passing RAW payload through
  kFillValue,    // collecting a FILL pattern
  kCrcValue,     // collecting a CRC32 value
  kDone,         // all total_chunks chunks consumed
  kFailed,
};

}  // namespace

struct Decoder::State {
  Sink* sink;
  DecoderOptions options;
  Phase phase = Phase::kFileHeader;
  Phase after_skip = Phase::kChunkHeader;
  uint8_t buf[kFileHeaderSize] = {};
  size_t have = 0;         // bytes collected in buf
  uint64_t skip_left = 0;  // in kSkipExtra
  bool chunk_extra = false;  // the skipped bytes belong to a chunk header
  bool header_parsed = false;
  FileHeader header;
  ChunkHeader chunk;
  uint32_t chunks_done = 0;
  uint64_t chunk_start = 0;  // input offset of the current chunk header
  uint64_t chunk_out = 0;    // output offset where the current chunk starts
  uint64_t payload_start = 0;
  ChunkInfo info;            // filled as the chunk completes
  uint64_t in_off = 0;
  uint64_t out_off = 0;      // output bytes covered by completed and current chunks' emitted parts
  uint64_t raw_left = 0;
  // CRC of the expanded image so far, and the value libsparse's writer would
  // have computed (FILL counted as one block, DONT_CARE not at all), only to
  // explain a mismatch.
  uint32_t crc = 0;
  uint32_t libsparse_crc = 0;
  bool crc_tracked = true;
  Status error;

  Status Fail(Status s) {
    phase = Phase::kFailed;
    error = std::move(s);
    return error;
  }
  std::string ChunkWhere() const {
    return fmt::format("chunk {} at input byte 0x{:x}", chunks_done, chunk_start);
  }
  Status ChunkError(std::string_view what) {
    return Fail(Corrupt(fmt::format("{}: {}", ChunkWhere(), what)));
  }
  Status HeaderError(std::string_view what) {
    return Fail(Corrupt(fmt::format("file header at input byte 0x0: {}", what)));
  }

  // --- CRC bookkeeping -------------------------------------------------------
  bool crc_wanted() const { return options.check_crc && crc_tracked; }
  void CrcRaw(uint32_t piece_crc, uint64_t n) {
    if (!CrcReserve(n)) return;
    crc = Crc32Combine(crc, piece_crc, n);
    libsparse_crc = Crc32Combine(libsparse_crc, piece_crc, n);
  }
  void CrcRawBytes(std::span<const uint8_t> d) {
    if (!crc_wanted()) return;
    if (crc == libsparse_crc) {  // the common case: one pass over the bytes
      if (!CrcReserve(d.size())) return;
      crc = libsparse_crc = Crc32Update(crc, d.data(), d.size());
      return;
    }
    CrcRaw(Crc32Update(0, d.data(), d.size()), d.size());
  }
  void CrcPattern(uint32_t pattern, uint64_t len, bool is_fill) {
    if (!crc_wanted() || !CrcReserve(len)) return;
    crc = Crc32AppendPattern(crc, pattern, len / 4);
    if (is_fill && len > 0) libsparse_crc = Crc32AppendPattern(libsparse_crc, pattern, header.blk_sz / 4);
  }
  uint64_t crc_len = 0;
  bool CrcReserve(uint64_t n) {
    if (!crc_tracked) return false;
    if (n >= kCrcTrackLimit - crc_len) {
      crc_tracked = false;
      return false;
    }
    crc_len += n;
    return true;
  }

  // --- phases ----------------------------------------------------------------
  // Copies up to `want - have` bytes into buf; true when buf holds `want`.
  bool Collect(std::span<const uint8_t>& data, size_t want) {
    size_t n = std::min(want - have, data.size());
    std::memcpy(buf + have, data.data(), n);
    have += n;
    in_off += n;
    data = data.subspan(n);
    return have == want;
  }

  Status OnFileHeader() {
    FileHeader h = ParseFileHeader({buf, kFileHeaderSize});
    have = 0;
    if (h.magic != kMagic) return HeaderError(fmt::format("bad magic 0x{:08x} (expected 0x{:08x})", h.magic, kMagic));
    if (h.major_version != kMajorVersion)
      return HeaderError(fmt::format("major_version {} unsupported (expected 1)", h.major_version));
    if (h.file_hdr_sz < kFileHeaderSize)
      return HeaderError(fmt::format("file_hdr_sz {} < {}", h.file_hdr_sz, kFileHeaderSize));
    if (h.chunk_hdr_sz < kChunkHeaderSize)
      return HeaderError(fmt::format("chunk_hdr_sz {} < {}", h.chunk_hdr_sz, kChunkHeaderSize));
    if (h.blk_sz == 0 || h.blk_sz % 4 != 0)
      return HeaderError(fmt::format("blk_sz {} is not a non-zero multiple of 4", h.blk_sz));
    if (h.total_blks == 0) return HeaderError("total_blks is 0");
    header = h;
    header_parsed = true;
    Status s = sink->OnHeader(header);
    if (!s.ok()) return Fail(s);
    chunk_start = in_off + (h.file_hdr_sz - kFileHeaderSize);
    return EnterChunkBoundary(h.file_hdr_sz - kFileHeaderSize);
  }

  // After the file header or a chunk: skip `extra` header bytes, then either
  // the next chunk header or, when all chunks are in, the end checks.
  Status EnterChunkBoundary(uint64_t extra) {
    if (chunks_done == header.total_chunks) {
      if (extra > 0) {
        skip_left = extra;
        after_skip = Phase::kDone;
        phase = Phase::kSkipExtra;
        return Status::Ok();
      }
      return CompleteImage();
    }
    return StartSkip(extra, Phase::kChunkHeader);
  }

  Status StartSkip(uint64_t extra, Phase next) {
    if (extra == 0) {
      phase = next;
      return Status::Ok();
    }
    skip_left = extra;
    after_skip = next;
    phase = Phase::kSkipExtra;
    return Status::Ok();
  }

  Status CompleteImage() {
    uint64_t blocks = out_off / header.blk_sz;
    if (blocks != header.total_blks) {
      return Fail(Corrupt(fmt::format("input byte 0x{:x}: the {} chunks cover {} blocks but total_blks is {}",
                                      in_off, header.total_chunks, blocks, header.total_blks)));
    }
    phase = Phase::kDone;
    Status s = sink->OnEnd();
    if (!s.ok()) return Fail(s);
    return Status::Ok();
  }

  Status OnChunkHeader() {
    chunk = ParseChunkHeader({buf, kChunkHeaderSize});
    have = 0;
    const uint64_t hdr = header.chunk_hdr_sz;
    const uint64_t total = chunk.total_sz;
    const char* name = ChunkTypeName(chunk.chunk_type);
    Phase next = Phase::kChunkHeader;
    switch (chunk.chunk_type) {
      case kChunkRaw:
        if (total != hdr + uint64_t{chunk.chunk_sz} * header.blk_sz)
          return ChunkError(fmt::format("RAW total_sz {} != {} + {} * {}", total, hdr, chunk.chunk_sz, header.blk_sz));
        next = Phase::kRawData;
        break;
      case kChunkFill:
      case kChunkCrc32:
        if (total != hdr + 4) return ChunkError(fmt::format("{} total_sz {} != {} + 4", name, total, hdr));
        next = chunk.chunk_type == kChunkFill ? Phase::kFillValue : Phase::kCrcValue;
        break;
      case kChunkDontCare:
        if (total != hdr) return ChunkError(fmt::format("DONT_CARE total_sz {} != {}", total, hdr));
        break;
      default:
        return ChunkError(fmt::format("unknown chunk type 0x{:04x}", chunk.chunk_type));
    }
    if (chunk.chunk_type != kChunkCrc32) {
      uint64_t at = out_off / header.blk_sz;
      if (chunk.chunk_sz > header.total_blks - at)
        return ChunkError(fmt::format("{} of {} blocks at block {} runs past total_blks {}", name, chunk.chunk_sz, at,
                                      header.total_blks));
    }
    raw_left = uint64_t{chunk.chunk_sz} * header.blk_sz;
    phase = next;
    if (hdr > kChunkHeaderSize) {
      chunk_extra = true;
      return StartSkip(hdr - kChunkHeaderSize, next);
    }
    return StartPayload();
  }

  // Entered once the whole chunk header (with extra bytes) is consumed.
  Status StartPayload() {
    chunk_out = out_off;
    payload_start = in_off;
    info = {};
    if (phase == Phase::kRawData && raw_left == 0) return EndChunk();
    if (chunk.chunk_type == kChunkDontCare) {
      uint64_t len = uint64_t{chunk.chunk_sz} * header.blk_sz;
      if (len > 0) {
        Status s = sink->OnSkip(out_off, len);
        if (!s.ok()) return Fail(s);
        CrcPattern(0, len, false);
        out_off += len;
      }
      return EndChunk();
    }
    return Status::Ok();
  }

  Status EndChunk() {
    info.index = chunks_done;
    info.type = chunk.chunk_type;
    info.blocks = chunk.chunk_sz;
    info.total_sz = chunk.total_sz;
    info.input_offset = chunk_start;
    info.payload_offset = payload_start;
    info.output_offset = chunk_out;
    Status s = sink->OnChunk(info);
    if (!s.ok()) return Fail(s);
    ++chunks_done;
    chunk_start = in_off;
    return EnterChunkBoundary(0);
  }

  Status OnFillValue() {
    uint32_t pattern = LoadLE<uint32_t>(buf);
    have = 0;
    info.value = pattern;
    uint64_t len = uint64_t{chunk.chunk_sz} * header.blk_sz;
    if (len > 0) {
      Status s = sink->OnFill(out_off, len, pattern);
      if (!s.ok()) return Fail(s);
      CrcPattern(pattern, len, true);
      out_off += len;
    }
    return EndChunk();
  }

  Status OnCrcValue() {
    uint32_t expected = LoadLE<uint32_t>(buf);
    have = 0;
    info.value = expected;
    if (options.check_crc) {
      info.crc_checked = crc_tracked;
      info.computed_crc = crc;
      if (!crc_tracked)
        return ChunkError("CRC32 cannot be checked after 2^60 bytes of output (check_crc=false / --no-crc-check skips it)");
      if (expected != crc) {
        std::string msg = fmt::format("CRC32 0x{:08x} != 0x{:08x}, the CRC-32 of the {} bytes of output so far",
                                      expected, crc, out_off);
        if (expected == libsparse_crc) {
          msg += "; it equals libsparse's miscomputed writer CRC (FILL counted as one block, DONT_CARE not "
                 "counted), so the data is probably intact: check_crc=false / --no-crc-check skips the check";
        }
        return ChunkError(msg);
      }
    }
    return EndChunk();
  }

  Status Raw(std::span<const uint8_t>& data) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(raw_left, data.size()));
    std::span<const uint8_t> piece = data.first(n);
    Status s = sink->OnRaw(out_off, piece);
    if (!s.ok()) return Fail(s);
    CrcRawBytes(piece);
    data = data.subspan(n);
    return ConsumeRaw(n);
  }

  Status ConsumeRaw(uint64_t n) {
    in_off += n;
    out_off += n;
    raw_left -= n;
    return raw_left == 0 ? EndChunk() : Status::Ok();
  }

  Status Step(std::span<const uint8_t>& data) {
    switch (phase) {
      case Phase::kFileHeader:
        return Collect(data, kFileHeaderSize) ? OnFileHeader() : Status::Ok();
      case Phase::kChunkHeader:
        return Collect(data, kChunkHeaderSize) ? OnChunkHeader() : Status::Ok();
      case Phase::kSkipExtra: {
        uint64_t n = std::min<uint64_t>(skip_left, data.size());
        data = data.subspan(n);
        in_off += n;
        skip_left -= n;
        if (skip_left > 0) return Status::Ok();
        phase = after_skip;
        if (chunk_extra) {
          chunk_extra = false;
          return StartPayload();
        }
        return phase == Phase::kDone ? CompleteImage() : Status::Ok();
      }
      case Phase::kRawData:
        return Raw(data);
      case Phase::kFillValue:
        return Collect(data, 4) ? OnFillValue() : Status::Ok();
      case Phase::kCrcValue:
        return Collect(data, 4) ? OnCrcValue() : Status::Ok();
      case Phase::kDone:
        return Fail(Corrupt(fmt::format("input byte 0x{:x}: data after the last chunk (total_chunks {})", in_off,
                                        header.total_chunks)));
      case Phase::kFailed:
        return error;
    }
    return Internal("bad decoder phase");
  }

  Status TruncatedError() {
    switch (phase) {
      case Phase::kFileHeader:
        if (in_off == 0) return Fail(Corrupt("input byte 0x0: empty input, no sparse file header"));
        return Fail(Corrupt(fmt::format("input byte 0x{:x}: truncated in the file header ({} of {} bytes)", in_off,
                                        have, kFileHeaderSize)));
      case Phase::kChunkHeader:
        if (have == 0) break;
        return ChunkError(fmt::format("truncated in the chunk header ({} of {} bytes) at input byte 0x{:x}", have,
                                      kChunkHeaderSize, in_off));
      case Phase::kSkipExtra:
        if (!chunk_extra) {
          return Fail(Corrupt(fmt::format("input byte 0x{:x}: truncated in the file header ({} bytes missing)",
                                          in_off, skip_left)));
        }
        return ChunkError(fmt::format("truncated in the chunk header ({} bytes missing) at input byte 0x{:x}",
                                      skip_left, in_off));
      case Phase::kRawData:
        return ChunkError(fmt::format("truncated RAW payload ({} of {} bytes) at input byte 0x{:x}",
                                      uint64_t{chunk.chunk_sz} * header.blk_sz - raw_left,
                                      uint64_t{chunk.chunk_sz} * header.blk_sz, in_off));
      case Phase::kFillValue:
      case Phase::kCrcValue:
        return ChunkError(fmt::format("truncated {} value ({} of 4 bytes) at input byte 0x{:x}",
                                      ChunkTypeName(chunk.chunk_type), have, in_off));
      default:
        break;
    }
    return Fail(Corrupt(fmt::format("input byte 0x{:x}: truncated after {} of {} chunks", in_off, chunks_done,
                                    header.total_chunks)));
  }

  // The AOSP fastboot client's parts of an unaligned raw image lack their
  // final DONT_CARE; accept exactly that shape and report the rest as a skip.
  bool MissingTailTolerated() const {
    return options.tolerate_missing_tail && phase == Phase::kChunkHeader && have == 0 &&
           chunks_done + 1 == header.total_chunks && out_off / header.blk_sz < header.total_blks;
  }

  Status Finish() {
    if (phase == Phase::kFailed) return error;
    if (phase == Phase::kDone) return Status::Ok();
    if (!MissingTailTolerated()) return TruncatedError();
    uint64_t end = header.image_size();
    Status s = sink->OnSkip(out_off, end - out_off);
    if (!s.ok()) return Fail(s);
    CrcPattern(0, end - out_off, false);
    out_off = end;
    ++chunks_done;
    return CompleteImage();
  }
};

Decoder::Decoder(Sink* sink, DecoderOptions options) : s_(std::make_unique<State>()) {
  s_->sink = sink;
  s_->options = options;
}

Decoder::~Decoder() = default;

Status Decoder::Feed(std::span<const uint8_t> data) {
  if (s_->phase == Phase::kFailed) return s_->error;
  while (!data.empty()) {
    Status s = s_->Step(data);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status Decoder::Finish() { return s_->Finish(); }

uint64_t Decoder::raw_pending() const { return s_->phase == Phase::kRawData ? s_->raw_left : 0; }
uint64_t Decoder::raw_output_offset() const { return s_->out_off; }

Status Decoder::AdvanceRaw(uint64_t n, uint32_t crc) {
  if (s_->phase == Phase::kFailed) return s_->error;
  if (n > raw_pending())
    return s_->Fail(Internal(fmt::format("AdvanceRaw({}) beyond the {} pending RAW bytes", n, raw_pending())));
  if (n == 0) return Status::Ok();
  if (s_->crc_wanted()) s_->CrcRaw(crc, n);
  return s_->ConsumeRaw(n);
}

bool Decoder::header_parsed() const { return s_->header_parsed; }
const FileHeader& Decoder::header() const { return s_->header; }
uint64_t Decoder::input_offset() const { return s_->in_off; }
uint32_t Decoder::chunks_done() const { return s_->chunks_done; }
bool Decoder::finished() const { return s_->phase == Phase::kDone; }

}  // namespace flashpipe::sparse
