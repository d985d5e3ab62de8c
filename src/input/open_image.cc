// OpenImage: from a command-line image spec to an ImageSource (see the table
// in image_source.h), and PartsSource for comma-separated sparse parts.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd_io.h"
#include "input/decompress_reader.h"
#include "input/detect.h"
#include "input/sources.h"
#include "sparse/decoder.h"
#include "sparse/format.h"
#include "sparse/sink.h"

namespace flashpipe::input {
namespace {

class PartsSource : public ImageSource {
 public:
  explicit PartsSource(std::vector<std::unique_ptr<ImageSource>> parts) : parts_(std::move(parts)) {}
  std::string kind() const override { return fmt::format("parts({})+{}", parts_.size(), parts_.front()->kind()); }
  std::optional<uint64_t> known_size() const override {
    uint64_t size = 0;
    for (const auto& p : parts_) {
      auto s = p->known_size();
      if (!s) return std::nullopt;
      size = std::max(size, *s);
    }
    return size;
  }
  uint64_t image_size() const override {
    uint64_t size = 0;
    for (const auto& p : parts_) size = std::max(size, p->image_size());
    return size;
  }
  Status Run(ImageSink* sink) override {
    for (size_t i = 0; i < parts_.size(); ++i) {
      Status s = parts_[i]->Run(sink);
      if (!s.ok()) return s.WithContext(fmt::format("part {} of {}", i + 1, parts_.size()));
    }
    return Status::Ok();
  }

 private:
  std::vector<std::unique_ptr<ImageSource>> parts_;
};

Result<std::span<const uint8_t>> PeekHead(PeekReader& r) { return r.Peek(kDetectBytes); }

// A stream (stdin, fifo, or any compressed input): decompress if needed,
// then sparse, raw or raw+bmap by the decompressed bytes.
Result<std::unique_ptr<ImageSource>> OpenStream(std::unique_ptr<ByteReader> in, const SourceOptions& options,
                                                const Bmap* bmap) {
  auto reader = std::make_unique<PeekReader>(std::move(in));
  FP_ASSIGN_OR_RETURN(auto head, PeekHead(*reader));
  ImageKind kind = DetectKind(head);
  std::string prefix;
  if (IsCompressed(kind)) {
    FP_ASSIGN_OR_RETURN(auto dec, DecompressReader::Start(kind, std::move(reader)));
    reader = std::make_unique<PeekReader>(std::move(dec));
    FP_ASSIGN_OR_RETURN(head, PeekHead(*reader));
    prefix = fmt::format("{}+", KindName(kind));
    kind = DetectKind(head);
    if (IsCompressed(kind)) {
      return Unsupported(fmt::format("{}: {} inside {} is not supported", reader->name(), KindName(kind), prefix));
    }
  }
  if (bmap != nullptr) {
    if (kind == ImageKind::kSparse) {
      return InvalidArgument(fmt::format("{}: --bmap needs a raw image, this one is sparse", reader->name()));
    }
    return MakeBmapSource(std::move(reader), *bmap, prefix);
  }
  return MakeStreamSource(std::move(reader), prefix, kind == ImageKind::kSparse, options);
}

Result<uint64_t> SourceSize(int fd, const struct stat& st, const std::string& path) {
  if (!S_ISBLK(st.st_mode)) return static_cast<uint64_t>(st.st_size);
  uint64_t size = 0;
  if (::ioctl(fd, BLKGETSIZE64, &size) != 0) return ErrnoError(fmt::format("{}: BLKGETSIZE64", path));
  return size;
}

Result<std::unique_ptr<ImageSource>> OpenPath(const std::string& path, const SourceOptions& options,
                                              const Bmap* bmap) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot open image {}", path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("cannot stat image {}", path));
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) return OpenStream(FdReader::Own(std::move(fd), path), options, bmap);
  FP_ASSIGN_OR_RETURN(uint64_t size, SourceSize(fd.get(), st, path));
  uint8_t head[kDetectBytes] = {};
  FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd.get(), head, 0, path));
  ImageKind kind = DetectKind(std::span<const uint8_t>(head, n));
  if (bmap != nullptr && kind == ImageKind::kRaw) {
    if (size < bmap->image_size) {
      return Corrupt(fmt::format("image {} has {} bytes, fewer than bmap ImageSize {}", path, size, bmap->image_size));
    }
    return MakeBmapFileSource(std::move(fd), path, *bmap);
  }
  if (IsCompressed(kind) || bmap != nullptr) return OpenStream(FdReader::Own(std::move(fd), path), options, bmap);
  if (kind == ImageKind::kSparse) {
    // Check the file header before any target is opened, created or truncated.
    uint8_t hdr[sparse::kFileHeaderSize] = {};
    FP_ASSIGN_OR_RETURN(size_t h, PreadUpTo(fd.get(), hdr, 0, path));
    sparse::NullSink null;
    sparse::Decoder dec(&null, options.decoder);
    Status s = dec.Feed(std::span<const uint8_t>(hdr, h));
    if (s.ok() && h < sizeof hdr) s = dec.Finish();
    if (!s.ok()) return s.WithContext(path);
    return MakeSparseFileSource(std::move(fd), path, size, options.decoder);
  }
  return MakeRawFileSource(std::move(fd), path, size);
}

std::vector<std::string> SplitParts(const std::string& spec) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = spec.find(',', start);
    parts.push_back(spec.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

Result<std::unique_ptr<ImageSource>> OpenParts(const std::string& spec, const SourceOptions& options) {
  std::vector<std::unique_ptr<ImageSource>> parts;
  for (const std::string& path : SplitParts(spec)) {
    if (path.empty() || path == "-") return InvalidArgument(fmt::format("bad part '{}' in '{}'", path, spec));
    FP_ASSIGN_OR_RETURN(auto part, OpenPath(path, options, nullptr));
    std::string kind = part->kind();
    if (!kind.ends_with("sparse")) {
      return InvalidArgument(fmt::format("part {} is {}, but parts must be sparse images", path, kind));
    }
    parts.push_back(std::move(part));
  }
  return std::unique_ptr<ImageSource>(new PartsSource(std::move(parts)));
}

}  // namespace

Result<std::unique_ptr<ImageSource>> OpenImage(const std::string& spec, const SourceOptions& options) {
  std::optional<Bmap> bmap;
  if (!options.bmap_path.empty()) {
    FP_ASSIGN_OR_RETURN(bmap, LoadBmap(options.bmap_path));
  }
  const Bmap* b = bmap ? &*bmap : nullptr;
  if (spec == "-") return OpenStream(FdReader::Borrow(STDIN_FILENO, "stdin"), options, b);
  struct stat st;
  if (spec.find(',') != std::string::npos && ::stat(spec.c_str(), &st) != 0) {
    if (b != nullptr) return InvalidArgument("--bmap takes one raw image, not parts");
    return OpenParts(spec, options);
  }
  return OpenPath(spec, options, b);
}

}  // namespace flashpipe::input
