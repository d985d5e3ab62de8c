#include "fastboot/readback.h"

#include <algorithm>
#include <vector>

#include "base/units.h"
#include "io/image_reader.h"
#include "wire/protocol.h"

namespace flashpipe::fastboot {
namespace {

// Holes and the padding after a read error come from here.
constexpr size_t kZeroSlice = 256 << 10;
const uint8_t* Zeros() {
  static const std::vector<uint8_t> zeros(kZeroSlice, 0);
  return zeros.data();
}

// Decimal or 0x hex, nothing else (base/units.h): a range is no place for guesses.
Result<uint64_t> ParseNumber(std::string_view text, std::string_view what) {
  auto v = flashpipe::ParseNumber(text);
  if (!v.ok()) return InvalidArgument(fmt::format("{} '{}': {}", what, text.substr(0, 20), v.status().message()));
  return v;
}

}  // namespace

Result<RangeArg> ParseRangeArg(std::string_view text) {
  RangeArg arg;
  size_t c1 = text.find(':');
  arg.partition = std::string(text.substr(0, c1));
  if (arg.partition.empty()) return InvalidArgument("missing partition name");
  if (c1 == std::string_view::npos) return arg;
  std::string_view rest = text.substr(c1 + 1);
  size_t c2 = rest.find(':');
  FP_ASSIGN_OR_RETURN(arg.offset, ParseNumber(rest.substr(0, c2), "offset"));
  if (c2 == std::string_view::npos) return arg;
  rest = rest.substr(c2 + 1);
  if (rest.find(':') != std::string_view::npos) return InvalidArgument("expected PARTITION[:OFFSET[:SIZE]]");
  FP_ASSIGN_OR_RETURN(arg.size, ParseNumber(rest, "size"));
  return arg;
}

Result<ByteRange> ResolveRange(const Partition& p, const RangeArg& arg) {
  ByteRange r{arg.offset.value_or(0), 0};
  if (r.offset > p.size) {
    return InvalidArgument(fmt::format("offset 0x{:x} is past the end of '{}' (0x{:x} bytes)", r.offset, p.name, p.size));
  }
  r.size = arg.size.value_or(p.size - r.offset);
  if (r.size > p.size - r.offset) {
    return InvalidArgument(fmt::format("0x{:x}+0x{:x} runs past the end of '{}' (0x{:x} bytes)", r.offset, r.size,
                                       p.name, p.size));
  }
  return r;
}

// --- RangeReader -------------------------------------------------------------

struct RangeReader::Impl {
  std::string partition;
  ReadView view;
  std::unique_ptr<io::ImageReader> reader;
  uint64_t skip = 0;   // bytes before the range, read because O_DIRECT starts at a block
  uint64_t left = 0;   // of the range, not yet handed out
  uint64_t zeros = 0;  // of the current hole, not yet handed out
  io::ReadPiece piece;  // the current data piece
  uint64_t piece_at = 0;
};

RangeReader::RangeReader() : impl_(std::make_unique<Impl>()) {}
RangeReader::~RangeReader() = default;

Result<std::unique_ptr<RangeReader>> RangeReader::Open(const Storage& storage, const Partition& p, ByteRange range) {
  std::unique_ptr<RangeReader> r(new RangeReader());
  Impl& m = *r->impl_;
  m.partition = p.name;
  m.left = range.size;
  if (range.size == 0) return r;
  FP_ASSIGN_OR_RETURN(m.view, storage.OpenRead(p));
  const io::Geometry& g = m.view.target->geometry();
  const uint64_t align = g.direct ? std::max<uint64_t>(g.logical_block, 512) : 1;
  const uint64_t start = range.offset / align * align;
  m.skip = range.offset - start;
  io::ReaderOptions options{.request_size = m.view.request_size, .skip_holes = m.view.skip_holes};
  auto reader = io::ImageReader::Create(*m.view.target, m.view.queue, start, range.size + m.skip, options);
  if (!reader.ok()) return reader.status().WithContext(fmt::format("partition '{}'", p.name));
  m.reader = std::move(*reader);
  return r;
}

Result<std::span<const uint8_t>> RangeReader::Next() {
  Impl& m = *impl_;
  while (m.left > 0) {
    if (m.zeros > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>({m.zeros, kZeroSlice, m.left}));
      m.zeros -= n;
      m.left -= n;
      done_ += n;
      return std::span<const uint8_t>(Zeros(), n);
    }
    if (m.piece_at < m.piece.data.size()) {
      auto out = m.piece.data.subspan(m.piece_at, static_cast<size_t>(std::min<uint64_t>(
                                                      m.piece.data.size() - m.piece_at, m.left)));
      m.piece_at = m.piece.data.size();
      m.left -= out.size();
      done_ += out.size();
      return out;
    }
    auto piece = m.reader->Next();
    if (!piece.ok()) return piece.status().WithContext(fmt::format("partition '{}'", m.partition));
    if (piece->length == 0) return Internal(fmt::format("partition '{}': reader ended early", m.partition));
    uint64_t drop = std::min(m.skip, piece->length);
    m.skip -= drop;
    m.piece = piece->hole ? io::ReadPiece{} : *piece;
    m.piece_at = drop;
    if (piece->hole) m.zeros = piece->length - drop;
  }
  return std::span<const uint8_t>();
}

// --- the two uses ------------------------------------------------------------

Status SendRange(Connection& transport, RangeReader& reader, uint64_t size, Status* read_error) {
  FP_RETURN_IF_ERROR(transport.BeginData(size));
  FP_RETURN_IF_ERROR(transport.Send(wire::Data(static_cast<uint32_t>(size))));
  uint64_t sent = 0;
  while (sent < size) {
    auto bytes = reader.Next();
    if (!bytes.ok()) {
      *read_error = bytes.status();
      break;
    }
    FP_RETURN_IF_ERROR(transport.SendData(*bytes));
    sent += bytes->size();
  }
  while (sent < size) {  // after a read error: the host still waits for these
    size_t n = static_cast<size_t>(std::min<uint64_t>(size - sent, kZeroSlice));
    FP_RETURN_IF_ERROR(transport.SendData(std::span<const uint8_t>(Zeros(), n)));
    sent += n;
  }
  return Status::Ok();
}

Result<Sha256::Digest> DigestRange(RangeReader& reader, const std::function<Status(uint64_t done)>& progress) {
  Sha256 sha;
  for (;;) {
    FP_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, reader.Next());
    if (bytes.empty()) return sha.Final();
    sha.Update(bytes);
    FP_RETURN_IF_ERROR(progress(reader.done()));
  }
}

}  // namespace flashpipe::fastboot
