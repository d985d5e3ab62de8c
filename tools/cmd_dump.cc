// dump [--json] [--no-crc-check] SPARSE: the header and every chunk (index,
// input offset, output offset, type, blocks, bytes, FILL pattern, CRC values)
// and a totals line (RAW, FILL and DONT_CARE bytes) as a table or JSON. An
// invalid image is dumped up to the error, which is then reported (and the
// exit status is 1).
//
// A compressed input (gzip, xz, zstd, bzip2, lz4: magic bytes, as `write`
// detects them) is named as such; a sparse image inside is dumped with its
// input offsets in the decompressed stream, anything else is an error that
// says what the file is and that `write` reads it.
//
// JSON numbers stay numbers; magic, pattern and CRC values are also given as
// "0x%08x" strings (the *_hex keys), as the table prints them.
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/json.h"
#include "fetch/url.h"
#include "input/byte_reader.h"
#include "input/decompress_reader.h"
#include "input/detect.h"
#include "input/remote_image.h"
#include "sparse/decoder.h"
#include "tools/commands.h"
#include "tools/fetch_flags.h"
#include "tools/flags.h"
#include "tools/sparse_tools.h"

namespace flashpipe::tools {
namespace {

std::string Hex32(uint32_t v) { return fmt::format("0x{:08x}", v); }
std::string Chunks(uint32_t n) { return fmt::format("{} chunk{}", n, n == 1 ? "" : "s"); }

// Bytes and chunks of each type, over the chunks dumped.
struct Totals {
  uint64_t raw_bytes = 0, fill_bytes = 0, dont_care_bytes = 0;
  uint32_t raw_chunks = 0, fill_chunks = 0, dont_care_chunks = 0, crc32_chunks = 0;

  void Add(uint16_t type, uint64_t out_bytes) {
    switch (type) {
      case sparse::kChunkRaw: raw_bytes += out_bytes, ++raw_chunks; break;
      case sparse::kChunkFill: fill_bytes += out_bytes, ++fill_chunks; break;
      case sparse::kChunkDontCare: dont_care_bytes += out_bytes, ++dont_care_chunks; break;
      case sparse::kChunkCrc32: ++crc32_chunks; break;
    }
  }
  std::string Line() const {
    return fmt::format("total: RAW {} bytes ({}), FILL {} bytes ({}), DONT_CARE {} bytes ({}), CRC32 {}; "
                       "{} bytes expanded",
                       raw_bytes, Chunks(raw_chunks), fill_bytes, Chunks(fill_chunks), dont_care_bytes,
                       Chunks(dont_care_chunks), Chunks(crc32_chunks), raw_bytes + fill_bytes + dont_care_bytes);
  }
  std::string Json() const {
    return fmt::format("{{\"raw_bytes\": {}, \"fill_bytes\": {}, \"dont_care_bytes\": {}, \"raw_chunks\": {}, "
                       "\"fill_chunks\": {}, \"dont_care_chunks\": {}, \"crc32_chunks\": {}}}",
                       raw_bytes, fill_bytes, dont_care_bytes, raw_chunks, fill_chunks, dont_care_chunks,
                       crc32_chunks);
  }
};

class DumpSink : public sparse::NullSink {
 public:
  explicit DumpSink(bool json) : json_(json) {}

  Status OnHeader(const sparse::FileHeader& h) override {
    blk_ = h.blk_sz;
    if (json_) {
      std::printf("{%s, \"header\": {\"magic\": %u, \"magic_hex\": \"%s\", \"major_version\": %u, \"minor_version\": %u, "
                  "\"file_hdr_sz\": %u, \"chunk_hdr_sz\": %u, \"blk_sz\": %u, \"total_blks\": %u, "
                  "\"total_chunks\": %u, \"image_checksum\": %u, \"image_checksum_hex\": \"%s\", "
                  "\"image_size\": %llu},\n \"chunks\": [",
                  JsonSchemaMembers("dump", 1).c_str(), h.magic, Hex32(h.magic).c_str(), h.major_version, h.minor_version, h.file_hdr_sz, h.chunk_hdr_sz,
                  h.blk_sz, h.total_blks, h.total_chunks, h.image_checksum, Hex32(h.image_checksum).c_str(),
                  static_cast<unsigned long long>(h.image_size()));
      return Status::Ok();
    }
    std::printf("version %u.%u, file_hdr_sz %u, chunk_hdr_sz %u, blk_sz %u, total_blks %u (%llu bytes), "
                "total_chunks %u, image_checksum 0x%08x\n",
                h.major_version, h.minor_version, h.file_hdr_sz, h.chunk_hdr_sz, h.blk_sz, h.total_blks,
                static_cast<unsigned long long>(h.image_size()), h.total_chunks, h.image_checksum);
    std::printf("%6s  %-14s  %-14s  %-9s  %10s  %10s  %14s  %s\n", "chunk", "input_offset", "output_offset", "type",
                "blocks", "in_bytes", "out_bytes", "detail");
    return Status::Ok();
  }
  Status OnChunk(const sparse::ChunkInfo& c) override {
    uint64_t out_bytes = c.type == sparse::kChunkCrc32 ? 0 : uint64_t{c.blocks} * blk_;
    totals_.Add(c.type, out_bytes);
    if (json_) {
      PrintJsonChunk(c, out_bytes);
      return Status::Ok();
    }
    std::string detail;
    if (c.type == sparse::kChunkFill) detail = fmt::format("pattern 0x{:08x}", c.value);
    if (c.type == sparse::kChunkCrc32) {
      detail = c.crc_checked ? fmt::format("crc32 0x{:08x} (computed 0x{:08x})", c.value, c.computed_crc)
                             : fmt::format("crc32 0x{:08x} (not checked)", c.value);
    }
    std::printf("%6u  0x%012llx  0x%012llx  %-9s  %10u  %10u  %14llu  %s\n", c.index,
                static_cast<unsigned long long>(c.input_offset), static_cast<unsigned long long>(c.output_offset),
                sparse::ChunkTypeName(c.type), c.blocks, c.total_sz, static_cast<unsigned long long>(out_bytes),
                detail.c_str());
    return Status::Ok();
  }

  // After the last chunk or the error. `compression` names a compressed
  // input ("gzip"), else "".
  void End(const Status& s, std::string_view compression) {
    if (!json_) {
      if (blk_ != 0) std::printf("%s%s\n", s.ok() ? "" : "up to the error, ", totals_.Line().c_str());
      return;
    }
    if (blk_ == 0) std::printf("{%s, \"header\": null,\n \"chunks\": [", JsonSchemaMembers("dump", 1).c_str());
    std::printf("\n ],\n \"totals\": %s,\n \"compression\": %s,\n \"valid\": %s", totals_.Json().c_str(),
                compression.empty() ? "null" : JsonString(compression).c_str(), s.ok() ? "true" : "false");
    if (!s.ok()) std::printf(",\n \"error\": %s", JsonString(s.ToString()).c_str());
    std::printf("\n}\n");
  }

 private:
  void PrintJsonChunk(const sparse::ChunkInfo& c, uint64_t out_bytes) {
    std::printf("%s\n  {\"index\": %u, \"type\": \"%s\", \"input_offset\": %llu, \"output_offset\": %llu, "
                "\"blocks\": %u, \"input_bytes\": %u, \"output_bytes\": %llu",
                c.index == 0 ? "" : ",", c.index, sparse::ChunkTypeName(c.type),
                static_cast<unsigned long long>(c.input_offset), static_cast<unsigned long long>(c.output_offset),
                c.blocks, c.total_sz, static_cast<unsigned long long>(out_bytes));
    if (c.type == sparse::kChunkFill) std::printf(", \"pattern\": %u, \"pattern_hex\": \"%s\"", c.value, Hex32(c.value).c_str());
    if (c.type == sparse::kChunkCrc32) {
      std::printf(", \"crc32\": %u, \"crc32_hex\": \"%s\", \"crc_checked\": %s", c.value, Hex32(c.value).c_str(),
                  c.crc_checked ? "true" : "false");
      if (c.crc_checked) {
        std::printf(", \"computed_crc32\": %u, \"computed_crc32_hex\": \"%s\"", c.computed_crc,
                    Hex32(c.computed_crc).c_str());
      }
    }
    std::printf("}");
  }

  bool json_;
  uint32_t blk_ = 0;
  Totals totals_;
};

// The bytes to decode: the file, or what a compressed file holds.
struct DumpInput {
  std::unique_ptr<input::PeekReader> reader;
  std::string compression;  // "gzip", ...; "" when not compressed
  input::ImageKind content = input::ImageKind::kRaw;
};

Result<input::ImageKind> PeekKind(input::PeekReader& reader) {
  FP_ASSIGN_OR_RETURN(auto head, reader.Peek(input::kDetectBytes));
  return input::DetectKind(head);
}

std::string DisplayName(const std::string& path) { return path == "-" ? "stdin" : path; }

Result<DumpInput> OpenDumpInput(const std::string& path) {
  FP_ASSIGN_OR_RETURN(UniqueFd fd, OpenForRead(path));
  DumpInput in;
  in.reader = std::make_unique<input::PeekReader>(input::FdReader::Own(std::move(fd), DisplayName(path)));
  FP_ASSIGN_OR_RETURN(in.content, PeekKind(*in.reader));
  if (!input::IsCompressed(in.content)) return in;
  in.compression = input::KindName(in.content);
  FP_ASSIGN_OR_RETURN(auto inner, input::DecompressReader::Start(in.content, std::move(in.reader)));
  in.reader = std::make_unique<input::PeekReader>(std::move(inner));
  FP_ASSIGN_OR_RETURN(in.content, PeekKind(*in.reader));
  return in;
}

// A compressed file that holds no sparse image: what it is, and what reads it.
Status NotSparse(const std::string& path, const DumpInput& in) {
  if (in.content == input::ImageKind::kRaw) {
    return InvalidArgument(fmt::format("{}: {}-compressed raw image, not a sparse image: nothing to dump "
                                       "(flashpipe write reads it as it is)", DisplayName(path), in.compression));
  }
  return InvalidArgument(fmt::format("{}: {}-compressed {} data, not a sparse image", DisplayName(path), in.compression,
                                     input::KindName(in.content)));
}

Status Decode(input::ByteReader& reader, sparse::Sink& sink, sparse::DecoderOptions options) {
  sparse::Decoder decoder(&sink, options);
  std::vector<uint8_t> buf(size_t{1} << 20);
  for (;;) {
    FP_ASSIGN_OR_RETURN(size_t n, reader.Read(buf));
    if (n == 0) break;
    FP_RETURN_IF_ERROR(decoder.Feed(std::span(buf).first(n)));
  }
  return decoder.Finish();
}

}  // namespace

int RunDump(int argc, char** argv) {
  CLI::App app{"Print a sparse image's header, chunks and totals (also inside a gzip/xz/zstd/bzip2/lz4 file)",
               CommandName(argv[0])};
  std::string path, json_path;
  bool no_crc = false;
  AddJsonFlag(app, json_path, "the header, chunks and totals");
  app.add_flag("--no-crc-check", no_crc, "do not verify CRC32 chunks");
  app.add_option("SPARSE", path, "sparse image, possibly compressed; - for stdin; an http(s) URL (fetched whole)")
      ->required();
  FetchFlags fetch_flags;
  AddFetchFlags(app, fetch_flags);
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  if (Status s = CheckJsonFile(json_path, {path}); !s.ok()) return UsageError(app, s);
  std::optional<input::FetchedImage> fetched;  // a URL: its cache entry is dumped
  if (fetch::IsUrl(path)) {
    input::SourceOptions o;
    if (Status s = ApplyFetchFlags(fetch_flags, path, &o); !s.ok()) return UsageError(app, s);
    auto f = input::FetchImage(path, o);
    if (!f.ok()) return ExitWith("dump", f.status());
    fetched = std::move(*f);
    path = fetched->path;
  }
  auto in = OpenDumpInput(path);
  if (!in.ok()) return ExitWith("dump", in.status());
  const bool json = !json_path.empty();
  std::optional<AtomicFile> json_file;  // --json=FILE: stdout goes to FILE, whole or not at all
  if (json && json_path != "-") {
    auto f = AtomicFile::Create(json_path);
    if (!f.ok()) return ExitWith("dump", f.status());
    std::fflush(stdout);
    if (::dup2(f->fd(), STDOUT_FILENO) < 0) return ExitWith("dump", ErrnoError("redirect stdout to " + json_path));
    json_file.emplace(std::move(*f));
  }
  DumpSink sink(json);
  Status s;
  if (!in->compression.empty() && in->content != input::ImageKind::kSparse) {
    s = NotSparse(path, *in);
  } else {
    if (!in->compression.empty() && !json) {
      std::printf("%s: %s-compressed sparse image (flashpipe write reads it as it is); "
                  "input offsets are in the decompressed stream\n", DisplayName(path).c_str(), in->compression.c_str());
    }
    s = Decode(*in->reader, sink, {.check_crc = !no_crc});
    if (!s.ok() && s.code() == Code::kCorrupt) s = s.WithContext(in->reader->name());
  }
  sink.End(s, in->compression);
  if (Status out = FlushStdout(); !out.ok() && s.ok()) s = out;
  if (json_file && s.ok()) s = json_file->Commit();
  return ExitWith("dump", s);
}

}  // namespace flashpipe::tools
