#include "output/verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/zero.h"
#include "input/byte_reader.h"
#include "input/decompress_reader.h"
#include "sparse/decode_fd.h"
#include "sparse/sink.h"

namespace flashpipe::output {
namespace {

// The source, consumed front to back in any slicing.
class SourceCursor {
 public:
  SourceCursor(io::ImageReader& r, const VerifyTarget& t) : r_(r), t_(t) {}
  // Calls fn(bytes, n) over the next n bytes; bytes is empty for a hole.
  template <typename Fn>
  Status Take(uint64_t n, Fn&& fn) {
    while (n > 0) {
      if (pos_ == piece_.length) {
        if (t_.progress && piece_.length > 0) t_.progress(piece_.offset + piece_.length);
        FP_RETURN_IF_ERROR(CheckCancel(t_.cancel));
        FP_ASSIGN_OR_RETURN(piece_, r_.Next());
        pos_ = 0;
        if (piece_.length == 0) return Internal("verify: the source ended early");
      }
      uint64_t k = std::min(n, piece_.length - pos_);
      std::span<const uint8_t> bytes = piece_.hole ? std::span<const uint8_t>() : piece_.data.subspan(pos_, k);
      FP_RETURN_IF_ERROR(fn(bytes, k));
      pos_ += k;
      n -= k;
    }
    return Status::Ok();
  }

 private:
  io::ReadPiece piece_;
  uint64_t pos_ = 0;
  io::ImageReader& r_;
  const VerifyTarget& t_;
};

uint64_t FirstDifference(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != (b.empty() ? 0 : b[i])) return i;
  }
  return a.size();
}

// The decoded output as sparse::Sink events, against the source.
class Comparer : public sparse::Sink {
 public:
  Comparer(SourceCursor& source, std::string source_name, const VerifyTarget& t)
      : source_(source), source_name_(std::move(source_name)), t_(t) {}

  void SetOutputName(std::string name) { output_name_ = std::move(name); }

  Status OnHeader(const sparse::FileHeader& h) override {
    uint64_t want = (t_.length + h.blk_sz - 1) / h.blk_sz * h.blk_sz;
    if (h.image_size() != want) {
      return Mismatch(fmt::format("verify: {} expands to {} bytes, not the {} read", output_name_, h.image_size(), want));
    }
    return Status::Ok();
  }
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override { return Compare(offset, data); }
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override {
    uint8_t block[4096];
    for (size_t i = 0; i < sizeof block; i += 4) std::memcpy(block + i, &pattern, 4);
    while (length > 0) {
      uint64_t n = std::min<uint64_t>(length, sizeof block);
      FP_RETURN_IF_ERROR(Compare(offset, {block, n}));
      offset += n;
      length -= n;
    }
    return Status::Ok();
  }
  Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }

  // After the whole output: the rest of the source must be zeros.
  Status Finish() { return Advance(t_.length); }
  uint64_t cursor() const { return cursor_; }

 private:
  Status Differs(uint64_t at, std::string_view why) const {
    return Mismatch(fmt::format("verify: {} differs from {} at byte 0x{:x} of the range read{}", output_name_,
                                source_name_, at, why));
  }

  // Source bytes [cursor_, to) are not in the output: they must be zeros.
  Status Advance(uint64_t to) {
    if (to < cursor_) {
      return Corrupt(fmt::format("verify: {} defines byte 0x{:x} twice (or out of order)", output_name_, to));
    }
    uint64_t at = cursor_;
    FP_RETURN_IF_ERROR(source_.Take(to - cursor_, [&](std::span<const uint8_t> bytes, uint64_t n) {
      if (!bytes.empty() && !IsAllZero(bytes)) {
        return Differs(at + FirstDifference(bytes, {}), " (the output leaves it out, the source holds data)");
      }
      at += n;
      return Status::Ok();
    }));
    cursor_ = to;
    return Status::Ok();
  }

  Status Compare(uint64_t offset, std::span<const uint8_t> data) {
    uint64_t inside = offset >= t_.length ? 0 : std::min<uint64_t>(data.size(), t_.length - offset);
    if (inside < data.size() && !IsAllZero(data.subspan(inside))) {
      return Differs(offset + inside + FirstDifference(data.subspan(inside), {}), " (padding past the end)");
    }
    if (inside == 0) return Status::Ok();
    FP_RETURN_IF_ERROR(Advance(offset));
    uint64_t at = offset;
    FP_RETURN_IF_ERROR(source_.Take(inside, [&](std::span<const uint8_t> bytes, uint64_t n) {
      std::span<const uint8_t> out = data.subspan(at - offset, n);
      bool same = bytes.empty() ? IsAllZero(out) : std::memcmp(out.data(), bytes.data(), n) == 0;
      if (!same) return Differs(at + FirstDifference(out, bytes), "");
      at += n;
      return Status::Ok();
    }));
    cursor_ = offset + inside;
    return Status::Ok();
  }

  SourceCursor& source_;
  std::string source_name_, output_name_;
  const VerifyTarget& t_;
  uint64_t cursor_ = 0;
};

Status SizeIs(uint64_t got, uint64_t want, const std::string& name, std::string_view what) {
  if (got == want) return Status::Ok();
  return Mismatch(fmt::format("verify: {} {} {} bytes, not the {} read", name, what, got, want));
}

Status VerifyRaw(Comparer& c, const VerifyTarget& t) {
  int fd = t.fds.front();
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("stat {}", t.names.front()));
  FP_RETURN_IF_ERROR(SizeIs(static_cast<uint64_t>(st.st_size), t.length, t.names.front(), "holds"));
  io::Geometry g;
  g.size = t.length;
  g.logical_block = 4096;
  g.block_device = false;
  int flags = ::fcntl(fd, F_GETFL);
  g.direct = flags >= 0 && (flags & O_DIRECT) != 0;
  UniqueFd own(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!own.valid()) return ErrnoError(fmt::format("dup {}", t.names.front()));
  auto target = io::Target::FromFd(std::move(own), t.names.front(), g);
  FP_ASSIGN_OR_RETURN(auto queue, target->MakeQueue(t.queue.backend, t.queue.queue_depth));
  FP_ASSIGN_OR_RETURN(auto reader, io::ImageReader::Create(*target, queue.get(), 0, t.length,
                                                           {.request_size = t.queue.request_size}));
  for (;;) {
    FP_ASSIGN_OR_RETURN(io::ReadPiece p, reader->Next());
    if (p.length == 0) break;
    FP_RETURN_IF_ERROR(p.hole ? c.OnFill(p.offset, p.length, 0) : c.OnRaw(p.offset, p.data));
  }
  return Status::Ok();
}

Status VerifySparse(Comparer& c, const VerifyTarget& t) {
  for (size_t i = 0; i < t.fds.size(); ++i) {
    c.SetOutputName(t.names[i]);
    if (::lseek(t.fds[i], 0, SEEK_SET) != 0) return ErrnoError(fmt::format("seek {}", t.names[i]));
    FP_RETURN_IF_ERROR(sparse::DecodeFd(t.fds[i], c, {.check_crc = true}, t.names[i]));
  }
  return Status::Ok();
}

input::ImageKind KindOf(Format f) {
  if (f == Format::kZstd) return input::ImageKind::kZstd;
  if (f == Format::kXz) return input::ImageKind::kXz;
  return input::ImageKind::kGzip;
}

Status VerifyCompressed(Comparer& c, const VerifyTarget& t) {
  UniqueFd fd(::fcntl(t.fds.front(), F_DUPFD_CLOEXEC, 0));
  if (!fd.valid() || ::lseek(fd.get(), 0, SEEK_SET) != 0) return ErrnoError(fmt::format("rewind {}", t.names.front()));
  FP_ASSIGN_OR_RETURN(auto reader, input::DecompressReader::Start(
                                       KindOf(t.format), input::FdReader::Own(std::move(fd), t.names.front())));
  std::vector<uint8_t> buf(1 << 20);
  uint64_t at = 0;
  for (;;) {
    FP_ASSIGN_OR_RETURN(size_t n, reader->ReadUpTo(buf));
    if (n == 0) break;
    FP_RETURN_IF_ERROR(c.OnRaw(at, {buf.data(), n}));
    at += n;
  }
  return SizeIs(at, t.length, t.names.front(), "decompresses to");
}

}  // namespace

Status VerifyOutput(io::ImageReader& source, const std::string& source_name, const VerifyTarget& t) {
  if (t.fds.empty() || t.fds.size() != t.names.size()) return Internal("verify: no output to read back");
  SourceCursor cursor(source, t);
  Comparer c(cursor, source_name, t);
  c.SetOutputName(t.names.front());
  switch (t.format) {
    case Format::kRaw: FP_RETURN_IF_ERROR(VerifyRaw(c, t)); break;
    case Format::kSparse: FP_RETURN_IF_ERROR(VerifySparse(c, t)); break;
    default: FP_RETURN_IF_ERROR(VerifyCompressed(c, t)); break;
  }
  return c.Finish();
}

}  // namespace flashpipe::output
