#include "output/bmap_writer.h"

#include "base/fd_io.h"
#include "base/units.h"
#include "input/bmap.h"

namespace flashpipe::output {
namespace {

constexpr uint64_t kBlock = kRunBlock;
constexpr size_t kFlushAt = 64 << 10;
constexpr size_t kHexSize = 64;  // SHA-256

}  // namespace

struct BmapWriter::Impl {
  int fd = -1;
  std::string name;
  uint64_t image_size = 0;
  uint64_t blocks = 0;
  std::unique_ptr<RangeMapper> mapper;  // the runs given as a RunSink
  std::string text;           // not yet written
  uint64_t written = 0;       // bytes of the file written so far
  uint64_t mapped_at = 0, mapped_width = 0, checksum_at = 0;
  uint64_t next_block = 0;    // ranges start here or later
  uint64_t mapped = 0, ranges = 0;

  Status Append(std::string_view s) {
    text += s;
    return text.size() >= kFlushAt ? Flush() : Status::Ok();
  }
  Status Flush() {
    FP_RETURN_IF_ERROR(WriteAll(fd, {reinterpret_cast<const uint8_t*>(text.data()), text.size()}, name, written));
    written += text.size();
    text.clear();
    return Status::Ok();
  }
  // Offset in the file of the next byte appended.
  uint64_t Here() const { return written + text.size(); }

  Status Header();
  Status Add(const BmapRange& r);
  Status Patch(uint64_t at, std::string_view s) {
    return PwriteAll(fd, {reinterpret_cast<const uint8_t*>(s.data()), s.size()}, at, name);
  }
  Result<std::string> FileChecksum();
};

Status BmapWriter::Impl::Header() {
  std::string count = std::to_string(blocks);
  FP_RETURN_IF_ERROR(Append(fmt::format(
      "<?xml version=\"1.0\" ?>\n"
      "<!-- A block map in bmaptool's format 2.0, made by flashpipe: the blocks of\n"
      "     the image that hold data, which are all a copy needs to write, each\n"
      "     range with the SHA-256 of its bytes. -->\n"
      "<bmap version=\"2.0\">\n"
      "    <!-- {} -->\n"
      "    <ImageSize> {} </ImageSize>\n"
      "    <BlockSize> {} </BlockSize>\n"
      "    <BlocksCount> {} </BlocksCount>\n"
      "    <MappedBlocksCount> ",
      FormatBytes(image_size), image_size, kBlock, blocks)));
  mapped_at = Here();
  mapped_width = count.size();
  FP_RETURN_IF_ERROR(Append(std::string(mapped_width, ' ') + " </MappedBlocksCount>\n"
                            "    <ChecksumType> sha256 </ChecksumType>\n"
                            "    <!-- The SHA-256 of this file, computed with this value as 64 '0's -->\n"
                            "    <BmapFileChecksum> "));
  checksum_at = Here();
  return Append(std::string(kHexSize, '0') + " </BmapFileChecksum>\n    <BlockMap>\n");
}

Status BmapWriter::Impl::Add(const BmapRange& r) {
  if (r.first < next_block || r.last < r.first || r.last >= blocks || r.sha256.size() != kHexSize) {
    return Internal(fmt::format("bmap {}: range {}-{} does not follow block {} inside {} blocks", name, r.first,
                                r.last, next_block, blocks));
  }
  next_block = r.last + 1;
  mapped += r.last - r.first + 1;
  ++ranges;
  std::string blocks_text = r.first == r.last ? std::to_string(r.first) : fmt::format("{}-{}", r.first, r.last);
  return Append(fmt::format("        <Range chksum=\"{}\"> {} </Range>\n", r.sha256, blocks_text));
}

Result<std::string> BmapWriter::Impl::FileChecksum() {
  FP_ASSIGN_OR_RETURN(input::Digest d, input::Digest::Create("sha256"));
  std::vector<uint8_t> buf(1 << 20);
  for (uint64_t at = 0;;) {
    FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd, buf, at, name));
    if (n == 0) break;
    d.Update({buf.data(), n});
    at += n;
  }
  return d.HexFinal();
}

BmapWriter::~BmapWriter() = default;

Result<std::unique_ptr<BmapWriter>> BmapWriter::Create(int fd, std::string name, uint64_t image_size,
                                                       const BmapOptions& options) {
  auto w = std::unique_ptr<BmapWriter>(new BmapWriter());
  w->impl_ = std::make_unique<Impl>();
  Impl& m = *w->impl_;
  m.fd = fd;
  m.name = std::move(name);
  m.image_size = image_size;
  m.blocks = (image_size + kBlock - 1) / kBlock;
  FP_ASSIGN_OR_RETURN(m.mapper, RangeMapper::Create(options, [&m](const BmapRange& r) { return m.Add(r); }));
  FP_RETURN_IF_ERROR(m.Header());
  return w;
}

Status BmapWriter::OnData(uint64_t offset, std::span<const uint8_t> data) {
  return impl_->mapper->OnData(offset, data);
}

Status BmapWriter::OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) {
  return impl_->mapper->OnZeros(offset, length, kind);
}

Status BmapWriter::Add(const BmapRange& range) { return impl_->Add(range); }

Status BmapWriter::Finish(uint64_t length) {
  Impl& m = *impl_;
  FP_RETURN_IF_ERROR(m.mapper->Finish(length));
  FP_RETURN_IF_ERROR(m.Append("    </BlockMap>\n</bmap>\n"));
  FP_RETURN_IF_ERROR(m.Flush());
  FP_RETURN_IF_ERROR(m.Patch(m.mapped_at, std::to_string(m.mapped)));
  FP_ASSIGN_OR_RETURN(std::string sum, m.FileChecksum());
  return m.Patch(m.checksum_at, sum);
}

uint64_t BmapWriter::mapped_blocks() const { return impl_->mapped; }
uint64_t BmapWriter::blocks_count() const { return impl_->blocks; }
uint64_t BmapWriter::ranges() const { return impl_->ranges; }

}  // namespace flashpipe::output
