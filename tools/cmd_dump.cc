// dump [--json] [--no-crc-check] SPARSE: the header and every chunk (index,
// input offset, output offset, type, blocks, bytes, FILL pattern, CRC values)
// as a table or JSON. An invalid image is dumped up to the error, which is
// then reported (and the exit status is 1).
#include <cstdio>
#include <string>

#include "sparse/decode_fd.h"
#include "tools/commands.h"
#include "tools/sparse_tools.h"

namespace flashpipe::tools {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", c);
      continue;
    }
    out += c;
  }
  return out + "\"";
}

class DumpSink : public sparse::NullSink {
 public:
  explicit DumpSink(bool json) : json_(json) {}

  Status OnHeader(const sparse::FileHeader& h) override {
    blk_ = h.blk_sz;
    if (json_) {
      std::printf("{\"header\": {\"magic\": %u, \"major_version\": %u, \"minor_version\": %u, \"file_hdr_sz\": %u, "
                  "\"chunk_hdr_sz\": %u, \"blk_sz\": %u, \"total_blks\": %u, \"total_chunks\": %u, "
                  "\"image_checksum\": %u, \"image_size\": %llu},\n \"chunks\": [",
                  h.magic, h.major_version, h.minor_version, h.file_hdr_sz, h.chunk_hdr_sz, h.blk_sz, h.total_blks,
                  h.total_chunks, h.image_checksum, static_cast<unsigned long long>(h.image_size()));
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
    std::string detail;
    if (c.type == sparse::kChunkFill) detail = fmt::format("pattern 0x{:08x}", c.value);
    if (c.type == sparse::kChunkCrc32) {
      detail = c.crc_checked ? fmt::format("crc32 0x{:08x} (computed 0x{:08x})", c.value, c.computed_crc)
                             : fmt::format("crc32 0x{:08x} (not checked)", c.value);
    }
    if (json_) {
      std::printf("%s\n  {\"index\": %u, \"type\": \"%s\", \"input_offset\": %llu, \"output_offset\": %llu, "
                  "\"blocks\": %u, \"input_bytes\": %u, \"output_bytes\": %llu",
                  c.index == 0 ? "" : ",", c.index, sparse::ChunkTypeName(c.type),
                  static_cast<unsigned long long>(c.input_offset), static_cast<unsigned long long>(c.output_offset),
                  c.blocks, c.total_sz, static_cast<unsigned long long>(out_bytes));
      if (c.type == sparse::kChunkFill) std::printf(", \"pattern\": %u", c.value);
      if (c.type == sparse::kChunkCrc32) {
        std::printf(", \"crc32\": %u, \"crc_checked\": %s", c.value, c.crc_checked ? "true" : "false");
        if (c.crc_checked) std::printf(", \"computed_crc32\": %u", c.computed_crc);
      }
      std::printf("}");
      return Status::Ok();
    }
    std::printf("%6u  0x%012llx  0x%012llx  %-9s  %10u  %10u  %14llu  %s\n", c.index,
                static_cast<unsigned long long>(c.input_offset), static_cast<unsigned long long>(c.output_offset),
                sparse::ChunkTypeName(c.type), c.blocks, c.total_sz, static_cast<unsigned long long>(out_bytes),
                detail.c_str());
    return Status::Ok();
  }

  void End(const Status& s) {
    if (!json_) return;
    if (blk_ == 0) std::printf("{\"header\": null,\n \"chunks\": [");
    std::printf("\n ],\n \"valid\": %s", s.ok() ? "true" : "false");
    if (!s.ok()) std::printf(",\n \"error\": %s", JsonString(s.ToString()).c_str());
    std::printf("\n}\n");
  }

 private:
  bool json_;
  uint32_t blk_ = 0;
};

}  // namespace

int RunDump(int argc, char** argv) {
  CLI::App app{"Print a sparse image's header and chunks", "dump"};
  std::string path;
  bool json = false, no_crc = false;
  app.add_flag("--json", json, "JSON instead of a table");
  app.add_flag("--no-crc-check", no_crc, "do not verify CRC32 chunks");
  app.add_option("SPARSE", path, "sparse image, - for stdin")->required();
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  auto fd = OpenForRead(path);
  if (!fd.ok()) return ExitWith("dump", fd.status());
  DumpSink sink(json);
  Status s = sparse::DecodeFd(fd->get(), sink, {.check_crc = !no_crc}, path);
  sink.End(s);
  Status out = FlushStdout();
  if (!s.ok() && s.code() == Code::kCorrupt) s = s.WithContext(path);
  return ExitWith("dump", s.ok() ? out : s);
}

}  // namespace flashpipe::tools
