// OpenImage: from a command-line image spec to an ImageSource (see the table
// in image_source.h) with every check that can come before a write (empty
// images, sparse headers, sizes, the files read), and PartsSource for
// comma-separated sparse parts.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fd_io.h"
#include "fetch/url.h"
#include "input/decompress_reader.h"
#include "input/remote_image.h"
#include "input/sources.h"
#include "sparse/decoder.h"
#include "sparse/format.h"
#include "sparse/sink.h"

namespace flashpipe::input {
namespace {

// Enough for magic detection, a sparse file header and a zstd or lz4 frame
// header.
constexpr size_t kHeadBytes = 32;
static_assert(kHeadBytes >= kDetectBytes && kHeadBytes >= sparse::kFileHeaderSize);

std::string PartRole(size_t i, const std::string& path) { return fmt::format("part {} of the image ({})", i + 1, path); }
std::string ImageRole(const std::string& path) { return fmt::format("the image itself ({})", path); }
std::string BmapRole(const std::string& path) { return fmt::format("the bmap file {}", path); }
constexpr std::string_view kStdinRole = "stdin (the image)";

class PartsSource : public ImageSource {
 public:
  explicit PartsSource(std::vector<std::unique_ptr<ImageSource>> parts) : parts_(std::move(parts)) {
    for (const auto& p : parts_)
      for (const InputFile& f : p->inputs()) AddInput(f);
  }
  ImageForm form() const override {
    ImageForm f = parts_.front()->form();
    f.parts = parts_.size();
    return f;
  }
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

Status Empty(const std::string& what) {
  return InvalidArgument(fmt::format("{}: the image is empty; nothing written", what));
}

// The file header through a decoder, so that a bad header is refused before
// any target is opened for writing. `head` holds the first bytes of the image
// (all of it when shorter than a header).
Result<sparse::FileHeader> CheckSparseHeader(std::span<const uint8_t> head, const SourceOptions& options) {
  sparse::NullSink null;
  sparse::Decoder dec(&null, options.decoder);
  FP_RETURN_IF_ERROR(dec.Feed(head.first(std::min<size_t>(head.size(), sparse::kFileHeaderSize))));
  if (!dec.header_parsed()) FP_RETURN_IF_ERROR(dec.Finish());  // "truncated in the file header"
  if (!dec.header_parsed()) return Internal("sparse header not parsed");
  return dec.header();
}

// A seekable file under a stream, for the sizes compressed containers record.
struct FileRegion {
  int fd = -1;
  uint64_t start = 0, size = 0;
};

SizeHint ContainerSize(ImageKind compression, std::span<const uint8_t> head, const std::optional<FileRegion>& file) {
  SizeHint hint = SizeFromHead(compression, head);
  if (!file) return hint;
  SizeHint whole = SizeFromFile(compression, file->fd, file->start, file->size);
  if (whole.exact) return whole;
  hint.at_least = std::max(hint.at_least, whole.at_least);
  return hint;
}

// A stream (stdin, or any compressed input): decompress if needed,
// then sparse, raw or raw+bmap by the decompressed bytes.
Result<std::unique_ptr<ImageSource>> OpenStream(std::unique_ptr<ByteReader> in, const SourceOptions& options,
                                                const Bmap* bmap, std::optional<FileRegion> file) {
  auto reader = std::make_unique<PeekReader>(std::move(in));
  FP_ASSIGN_OR_RETURN(auto head, reader->Peek(kHeadBytes));
  if (head.empty()) return Empty(reader->name());
  ImageKind compression = DetectKind(head);
  SizeHint size;
  if (IsCompressed(compression)) {
    size = ContainerSize(compression, head, file);
    FP_ASSIGN_OR_RETURN(auto dec, DecompressReader::Start(compression, std::move(reader)));
    reader = std::make_unique<PeekReader>(std::move(dec));
    FP_ASSIGN_OR_RETURN(head, reader->Peek(kHeadBytes));
    if (head.empty()) return Empty(reader->name() + " (it decompresses to nothing)");
    if (ImageKind inner = DetectKind(head); IsCompressed(inner)) {
      return Unsupported(fmt::format("{}: {} inside {} is not supported", reader->name(), KindName(inner),
                                     KindName(compression)));
    }
  } else {
    compression = ImageKind::kRaw;
  }
  bool sparse = DetectKind(head) == ImageKind::kSparse;
  if (sparse && options.bmap_found) bmap = nullptr;  // a found bmap is not for this image
  if (bmap != nullptr && options.bmap_found && size.exact && *size.exact != bmap->image_size) {
    return Corrupt(fmt::format("{} decompresses to {} bytes, the bmap's ImageSize is {}", reader->name(),
                               *size.exact, bmap->image_size));
  }
  if (bmap != nullptr) {
    if (sparse) return InvalidArgument(fmt::format("{}: --bmap needs a raw image, this one is sparse", reader->name()));
    return MakeBmapSource(std::move(reader), *bmap, compression);
  }
  if (sparse) {
    auto header = CheckSparseHeader(head, options);
    if (!header.ok()) return header.status().WithContext(reader->name());
    size = SizeHint{header->image_size(), header->image_size()};
  }
  return MakeStreamSource(std::move(reader), compression, sparse, options, size);
}

Result<uint64_t> SourceSize(int fd, const struct stat& st, const std::string& path) {
  if (!S_ISBLK(st.st_mode)) return static_cast<uint64_t>(st.st_size);
  uint64_t size = 0;
  if (::ioctl(fd, BLKGETSIZE64, &size) != 0) return ErrnoError(fmt::format("{}: BLKGETSIZE64", path));
  return size;
}

Result<std::unique_ptr<ImageSource>> OpenSeekable(UniqueFd fd, const std::string& path, uint64_t size,
                                                  const SourceOptions& options, const Bmap* bmap) {
  if (size == 0) return Empty(path);
  uint8_t head[kHeadBytes] = {};
  FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd.get(), head, 0, path));
  std::span<const uint8_t> got(head, n);
  ImageKind kind = DetectKind(got);
  if (kind == ImageKind::kSparse && options.bmap_found) bmap = nullptr;  // a found bmap is not for this image
  if (bmap != nullptr && kind == ImageKind::kRaw) {
    if (size < bmap->image_size) {
      return Corrupt(fmt::format("image {} has {} bytes, fewer than bmap ImageSize {}", path, size, bmap->image_size));
    }
    if (options.bmap_found && size != bmap->image_size) {
      return Corrupt(fmt::format("image {} has {} bytes, more than bmap ImageSize {}", path, size, bmap->image_size));
    }
    FP_RETURN_IF_ERROR(CheckFirstBmapRange(fd.get(), path, *bmap));
    return MakeBmapFileSource(std::move(fd), path, *bmap);
  }
  if (IsCompressed(kind) || bmap != nullptr) {
    FileRegion region{fd.get(), 0, size};
    return OpenStream(FdReader::Own(std::move(fd), path), options, bmap, region);
  }
  if (kind == ImageKind::kSparse) {
    auto header = CheckSparseHeader(got, options);
    if (!header.ok()) return header.status().WithContext(path);
    return MakeSparseFileSource(std::move(fd), path, size, options.decoder, options.raw_by_range);
  }
  return MakeRawFileSource(std::move(fd), path, size);
}

// What a file type that is not an image is called, or null for one that
// may be (a regular file, a block device, a directory's open fails later).
const char* StreamTypeName(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  return nullptr;
}

Status NotAnImage(const std::string& path, const char* what) {
  return InvalidArgument(fmt::format("{} is {}, not an image; use - for a stream", path, what));
}

Result<std::unique_ptr<ImageSource>> OpenPath(const std::string& path, const SourceOptions& options,
                                              const Bmap* bmap, std::string role) {
  FP_RETURN_IF_ERROR(CheckImagePathType(path));
  // O_NONBLOCK: a fifo swapped in after the check must not block the open;
  // the fstat below refuses it. It changes nothing for files and disks.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    // A missing image is the job's mistake, not the machine's: not_found in a report, not io_error.
    int e = errno;
    if (e == ENOENT) return NotFound(fmt::format("cannot open image {}: {}", path, std::strerror(e)));
    return IoError(fmt::format("cannot open image {}", path), e);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("cannot stat image {}", path));
  if (const char* what = StreamTypeName(st.st_mode)) return NotAnImage(path, what);
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return ErrnoError(fmt::format("cannot clear O_NONBLOCK on image {}", path));
  }
  InputFile input{std::move(role), FileIdOf(st)};
  Result<std::unique_ptr<ImageSource>> source = Internal("unreachable");
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    FP_ASSIGN_OR_RETURN(uint64_t size, SourceSize(fd.get(), st, path));
    source = OpenSeekable(std::move(fd), path, size, options, bmap);
  } else {
    source = OpenStream(FdReader::Own(std::move(fd), path), options, bmap, std::nullopt);
  }
  if (source.ok()) (*source)->AddInput(std::move(input));
  return source;
}

// stdin; when it is a regular file, the rest of it from the current offset
// is a region whose container sizes can be read.
Result<std::unique_ptr<ImageSource>> OpenStdin(const SourceOptions& options, const Bmap* bmap) {
  struct stat st;
  if (::fstat(STDIN_FILENO, &st) != 0) return ErrnoError("cannot stat stdin");
  std::optional<FileRegion> region;
  off_t at = S_ISREG(st.st_mode) ? ::lseek(STDIN_FILENO, 0, SEEK_CUR) : -1;
  if (at >= 0 && at <= st.st_size) {
    region = FileRegion{STDIN_FILENO, static_cast<uint64_t>(at), static_cast<uint64_t>(st.st_size - at)};
  }
  FP_ASSIGN_OR_RETURN(auto source, OpenStream(FdReader::Borrow(STDIN_FILENO, "stdin"), options, bmap, region));
  source->AddInput({std::string(kStdinRole), FileIdOf(st)});
  return source;
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
  std::vector<std::string> paths = SplitParts(spec);
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    if (path.empty() || path == "-") return InvalidArgument(fmt::format("bad part '{}' in '{}'", path, spec));
    FP_ASSIGN_OR_RETURN(auto part, OpenPath(path, options, nullptr, PartRole(i, path)));
    if (!part->form().sparse) {
      return InvalidArgument(fmt::format("part {} is {}, but parts must be sparse images", path, part->kind()));
    }
    parts.push_back(std::move(part));
  }
  return std::unique_ptr<ImageSource>(new PartsSource(std::move(parts)));
}

}  // namespace

Result<std::unique_ptr<ImageSource>> OpenSeekableFd(UniqueFd fd, const std::string& name, uint64_t size,
                                                    const SourceOptions& options, const Bmap* bmap) {
  return OpenSeekable(std::move(fd), name, size, options, bmap);
}

Result<std::unique_ptr<ImageSource>> OpenStreamReader(std::unique_ptr<ByteReader> reader, const SourceOptions& options,
                                                      const Bmap* bmap) {
  return OpenStream(std::move(reader), options, bmap, std::nullopt);
}

Status CheckImagePathType(const std::string& path) {
  if (path == "-" || fetch::IsUrl(path)) return Status::Ok();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();
  if (const char* what = StreamTypeName(st.st_mode)) return NotAnImage(path, what);
  return Status::Ok();
}

bool IsPartsSpec(const std::string& spec) {
  struct stat st;
  return !fetch::IsUrl(spec) && spec.find(',') != std::string::npos && ::stat(spec.c_str(), &st) != 0;
}

std::string ImageForm::Name() const {
  std::string name = parts > 0 ? fmt::format("parts({})+", parts) : "";
  if (compression != ImageKind::kRaw) name += fmt::format("{}+", KindName(compression));
  name += sparse ? "sparse" : "raw";
  return bmap ? name + "+bmap" : name;
}

Result<std::unique_ptr<ImageSource>> OpenImage(const std::string& spec, const SourceOptions& options) {
  if (fetch::IsUrl(spec)) return OpenUrlImage(spec, options);
  FP_RETURN_IF_ERROR(CheckImagePathType(spec));  // before --sha256 reads it
  std::optional<CheckedBmap> bmap;
  std::optional<FileId> bmap_id;
  if (!options.bmap_path.empty()) {
    FP_ASSIGN_OR_RETURN(bmap, LoadCheckedBmap(options.bmap_path, options));
    if (!fetch::IsUrl(options.bmap_path)) {
      FP_ASSIGN_OR_RETURN(bmap_id, FileIdOfPath(options.bmap_path));
    }
  }
  if (!options.fetch.sha256.empty()) FP_RETURN_IF_ERROR(CheckFileSha256(spec, options.fetch.sha256));
  const Bmap* b = bmap ? &bmap->bmap : nullptr;
  Result<std::unique_ptr<ImageSource>> source = Internal("unreachable");
  if (spec == "-") {
    source = OpenStdin(options, b);
  } else if (IsPartsSpec(spec)) {
    if (b != nullptr) return InvalidArgument("--bmap takes one raw image, not parts");
    source = OpenParts(spec, options);
  } else {
    source = OpenPath(spec, options, b, ImageRole(spec));
  }
  if (source.ok() && bmap_id) (*source)->AddInput({BmapRole(options.bmap_path), *bmap_id});
  if (source.ok() && bmap) (*source)->SetProvenance({.signed_by = bmap->signed_by});
  return source;
}

std::vector<InputFile> ImageFiles(const std::string& spec, const SourceOptions& options) {
  std::vector<InputFile> files;
  auto add = [&](const std::string& path, std::string role) {
    auto id = FileIdOfPath(path);
    if (id.ok() && *id) files.push_back({std::move(role), **id});
  };
  struct stat st;
  if (fetch::IsUrl(spec)) {
    // nothing local but the bmap
  } else if (spec == "-") {
    if (::fstat(STDIN_FILENO, &st) == 0) files.push_back({std::string(kStdinRole), FileIdOf(st)});
  } else if (IsPartsSpec(spec)) {
    std::vector<std::string> parts = SplitParts(spec);
    for (size_t i = 0; i < parts.size(); ++i) add(parts[i], PartRole(i, parts[i]));
  } else {
    add(spec, ImageRole(spec));
  }
  if (!options.bmap_path.empty() && !fetch::IsUrl(options.bmap_path)) add(options.bmap_path, BmapRole(options.bmap_path));
  return files;
}

}  // namespace flashpipe::input
