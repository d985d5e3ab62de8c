#include "input/remote_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd_io.h"
#include "base/sha256.h"
#include "fetch/sha256sums.h"
#include "fetch/url.h"
#include "input/find_bmap.h"
#include "input/sources.h"

namespace flashpipe::input {
namespace {

constexpr size_t kMaxBmapBytes = 64 << 20;
constexpr size_t kMaxSigBytes = 1 << 20;

std::string Shown(const std::string& spec) { return fetch::IsUrl(spec) ? fetch::DisplayUrl(spec) : spec; }

// A small file, local or at a URL; nullopt when it is not there and
// `missing_ok` (a name tried beside another).
Result<std::optional<std::string>> ReadText(const std::string& spec, const SourceOptions& o, size_t max, bool missing_ok) {
  if (fetch::IsUrl(spec)) return fetch::GetSmall(spec, o.fetch.http, max, missing_ok);
  UniqueFd fd(::open(spec.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (missing_ok && errno == ENOENT) return std::optional<std::string>();
    return ErrnoError(fmt::format("cannot open {}", spec));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("stat " + spec);
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > max) {
    return InvalidArgument(fmt::format("{}: not a regular file of at most {} bytes", spec, max));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd.get(), {reinterpret_cast<uint8_t*>(text.data()), text.size()}, 0, spec));
  text.resize(n);
  return std::optional<std::string>(std::move(text));
}

// The bmap's text after its signature check.
Result<CheckedBmap> CheckBmapText(const std::string& spec, const std::string& text, const SourceOptions& o) {
  const fetch::SignaturePolicy& policy = o.signature;
  std::string name = Shown(spec);
  std::string body = text;
  std::string signer;
  if (fetch::IsClearSigned(text)) {
    FP_ASSIGN_OR_RETURN(fetch::Verified v, fetch::VerifySignature(text, std::nullopt, policy, "bmap " + name));
    body = std::move(v.text);
    signer = std::move(v.fingerprint);
  } else if (policy.verify) {
    std::optional<std::string> sig;
    for (const char* suffix : {".asc", ".sig"}) {
      std::string candidate = fetch::IsUrl(spec) ? fetch::WithSuffix(spec, suffix) : spec + suffix;
      FP_ASSIGN_OR_RETURN(sig, ReadText(candidate, o, kMaxSigBytes, true));
      if (sig) break;
    }
    if (sig) {
      FP_ASSIGN_OR_RETURN(fetch::Verified v, fetch::VerifySignature(text, *sig, policy, "bmap " + name));
      signer = std::move(v.fingerprint);
    } else if (policy.required()) {
      return Corrupt(fmt::format("bmap {} is not signed (no inline signature, no {}.asc or {}.sig), and a key was "
                                 "given: nothing written", name, name, name));
    }
  }
  FP_ASSIGN_OR_RETURN(Bmap bmap, ParseBmap(body, name));
  return CheckedBmap{std::move(bmap), std::move(body), std::move(signer)};
}

// The first bmap beside the URL, with its text.
Result<std::optional<std::pair<std::string, std::string>>> FindUrlBmap(const std::string& url, const SourceOptions& o) {
  for (const std::string& candidate : BmapUrlCandidates(url)) {
    FP_ASSIGN_OR_RETURN(auto text, fetch::GetSmall(candidate, o.fetch.http, kMaxBmapBytes, true));
    if (text) return std::optional<std::pair<std::string, std::string>>({candidate, std::move(*text)});
  }
  return std::optional<std::pair<std::string, std::string>>();
}

// The image's bytes, read from the entry as they arrive.
class EntryReader : public ByteReader {
 public:
  explicit EntryReader(std::shared_ptr<fetch::RemoteFile> f) : f_(std::move(f)) {}
  Result<size_t> Read(std::span<uint8_t> out) override {
    uint64_t size = f_->stat().size;
    if (pos_ >= size || out.empty()) return size_t{0};
    FP_ASSIGN_OR_RETURN(uint64_t end, f_->WaitSome(pos_, std::min<uint64_t>(size, pos_ + out.size())));
    FP_ASSIGN_OR_RETURN(size_t got, PreadUpTo(f_->fd(), out.first(static_cast<size_t>(end - pos_)), pos_, f_->path()));
    if (got == 0) return Corrupt(fmt::format("{}: cache entry ends at byte 0x{:x}", f_->name(), pos_));
    pos_ += got;
    return got;
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return f_->name(); }
  void Cancel() override { f_->Stop(); }
  Result<uint64_t> Skip(uint64_t n) override {
    uint64_t to = std::min(f_->stat().size, pos_ + n), skipped = to - pos_;
    pos_ = to;
    return skipped;
  }

 private:
  std::shared_ptr<fetch::RemoteFile> f_;
  uint64_t pos_ = 0;
};

// Passes everything on but the end, which waits for the fetch's verdict.
class HoldEndSink : public ImageSink {
 public:
  explicit HoldEndSink(ImageSink* inner) : inner_(inner) {}
  Status OnHeader(const sparse::FileHeader& h) override { return inner_->OnHeader(h); }
  Status OnRaw(uint64_t o, std::span<const uint8_t> d) override { return inner_->OnRaw(o, d); }
  Status OnFill(uint64_t o, uint64_t n, uint32_t p) override { return inner_->OnFill(o, n, p); }
  Status OnSkip(uint64_t o, uint64_t n) override { return inner_->OnSkip(o, n); }
  Status OnChunk(const sparse::ChunkInfo& c) override { return inner_->OnChunk(c); }
  Status OnEnd() override { return Status::Ok(); }
  Result<uint32_t> RawFromFd(uint64_t out, int fd, uint64_t in, uint64_t n) override {
    return inner_->RawFromFd(out, fd, in, n);
  }

 private:
  ImageSink* inner_;
};

class RemoteImageSource : public ImageSource {
 public:
  RemoteImageSource(std::shared_ptr<fetch::RemoteFile> f, std::unique_ptr<ImageSource> inner)
      : f_(std::move(f)), inner_(std::move(inner)) {
    for (const InputFile& in : inner_->inputs()) AddInput(in);
  }
  ImageForm form() const override { return inner_->form(); }
  std::optional<uint64_t> known_size() const override { return inner_->known_size(); }
  uint64_t min_size() const override { return inner_->min_size(); }
  uint64_t image_size() const override { return inner_->image_size(); }
  Status Run(ImageSink* sink) override {
    HoldEndSink hold(sink);
    Status s = inner_->Run(&hold);
    if (!s.ok()) {
      f_->Stop();
      return s;
    }
    FP_RETURN_IF_ERROR(f_->Finish());
    return sink->OnEnd();
  }
  std::optional<fetch::FetchReport> download() const override { return f_->report(); }

 private:
  std::shared_ptr<fetch::RemoteFile> f_;
  std::unique_ptr<ImageSource> inner_;
};

std::vector<fetch::ByteSpan> MappedSpans(const Bmap& bmap) {
  std::vector<fetch::ByteSpan> spans;
  for (const BmapRange& r : bmap.ranges) {
    fetch::ByteSpan s{bmap.RangeBegin(r), bmap.RangeEnd(r)};
    if (!spans.empty() && spans.back().end == s.begin) spans.back().end = s.end;
    else if (s.end > s.begin) spans.push_back(s);
  }
  return spans;
}

// What OpenUrlImage and FetchImage share: the probe, the bmap, the plan.
struct UrlPlan {
  std::shared_ptr<fetch::RemoteFile> file;
  std::optional<CheckedBmap> bmap;
  ImageSource::Provenance provenance;
  ImageKind kind = ImageKind::kRaw;
  bool ranges_only = false;  // raw + bmap: the mapped ranges alone are fetched
};

Result<UrlPlan> PlanUrl(const std::string& url, const SourceOptions& o) {
  UrlPlan p;
  FP_ASSIGN_OR_RETURN(auto file, fetch::RemoteFile::Open(url, o.fetch));
  p.file = std::move(file);
  const std::string& name = p.file->name();
  uint64_t size = p.file->stat().size;
  if (size == 0) return InvalidArgument(fmt::format("{}: the image is empty; nothing written", name));
  p.kind = DetectKind(p.file->stat().head);
  if (!o.bmap_path.empty()) {
    FP_ASSIGN_OR_RETURN(auto text, ReadText(o.bmap_path, o, kMaxBmapBytes, false));
    FP_ASSIGN_OR_RETURN(p.bmap, CheckBmapText(o.bmap_path, *text, o));
    p.provenance.bmap = Shown(o.bmap_path);
  } else if (o.find_bmap) {
    FP_ASSIGN_OR_RETURN(auto found, FindUrlBmap(url, o));
    if (found && p.kind != ImageKind::kSparse) {
      FP_ASSIGN_OR_RETURN(p.bmap, CheckBmapText(found->first, found->second, o));
    }
    if (found) p.provenance = {.bmap = fetch::DisplayUrl(found->first), .bmap_found = true};
  }
  if (p.bmap) p.provenance.signed_by = p.bmap->signed_by;
  p.ranges_only = p.bmap && p.kind == ImageKind::kRaw && o.fetch.sha256.empty();
  if (p.ranges_only) {
    const Bmap& b = p.bmap->bmap;
    if (size < b.image_size) return Corrupt(fmt::format("image {} has {} bytes, fewer than bmap ImageSize {}", name, size, b.image_size));
    if (p.provenance.bmap_found && size != b.image_size) {
      return Corrupt(fmt::format("image {} has {} bytes, more than bmap ImageSize {}", name, size, b.image_size));
    }
  }
  std::vector<fetch::ByteSpan> wanted = p.ranges_only ? MappedSpans(p.bmap->bmap) : std::vector<fetch::ByteSpan>{{0, size}};
  FP_RETURN_IF_ERROR(p.file->Start(std::move(wanted)));
  return p;
}

Result<UniqueFd> Dup(int fd) {
  UniqueFd d(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!d.valid()) return ErrnoError("dup cache entry");
  return d;
}

}  // namespace

std::vector<std::string> BmapUrlCandidates(const std::string& url) {
  std::string_view path = fetch::UrlPath(url);
  std::string rest(url.substr(path.size()));
  std::vector<std::string> out;
  for (std::string c : BmapCandidates(std::string(path))) out.push_back(c + rest);
  return out;
}

Result<CheckedBmap> LoadCheckedBmap(const std::string& spec, const SourceOptions& options) {
  FP_ASSIGN_OR_RETURN(auto text, ReadText(spec, options, kMaxBmapBytes, false));
  if (!text) return NotFound(fmt::format("bmap {} not found", Shown(spec)));
  return CheckBmapText(spec, *text, options);
}

Result<std::unique_ptr<ImageSource>> OpenUrlImage(const std::string& url, const SourceOptions& options) {
  FP_ASSIGN_OR_RETURN(UrlPlan p, PlanUrl(url, options));
  const std::string& name = p.file->name();
  SourceOptions o = options;
  o.bmap_found = p.provenance.bmap_found;
  const Bmap* bmap = p.bmap ? &p.bmap->bmap : nullptr;
  FP_ASSIGN_OR_RETURN(UniqueFd fd, Dup(p.file->fd()));
  FP_ASSIGN_OR_RETURN(FileId entry_id, FileIdOfFd(fd.get(), p.file->path()));
  std::unique_ptr<ImageSource> inner;
  if (p.file->complete()) {
    FP_ASSIGN_OR_RETURN(inner, OpenSeekableFd(std::move(fd), name, p.file->stat().size, o, bmap));
  } else if (p.ranges_only) {
    std::shared_ptr<fetch::RemoteFile> f = p.file;
    RangeWait wait = [f](uint64_t begin, uint64_t end) { return f->WaitFor(begin, end); };
    if (!bmap->ranges.empty()) {
      FP_RETURN_IF_ERROR(wait(bmap->RangeBegin(bmap->ranges[0]), bmap->RangeEnd(bmap->ranges[0])));
      FP_RETURN_IF_ERROR(CheckFirstBmapRange(fd.get(), name, *bmap));
    }
    inner = MakeBmapFileSource(std::move(fd), name, *bmap, std::move(wait));
  } else {
    FP_ASSIGN_OR_RETURN(inner, OpenStreamReader(std::make_unique<EntryReader>(p.file), o, bmap));
  }
  auto source = std::make_unique<RemoteImageSource>(p.file, std::move(inner));
  source->AddInput({fmt::format("the cache entry of {} ({})", name, p.file->path()), entry_id});
  source->SetProvenance(p.provenance);
  return std::unique_ptr<ImageSource>(std::move(source));
}

Result<FetchedImage> FetchImage(const std::string& url, const SourceOptions& options) {
  FP_ASSIGN_OR_RETURN(UrlPlan p, PlanUrl(url, options));
  FP_RETURN_IF_ERROR(p.file->Finish());
  struct Keep {
    std::shared_ptr<fetch::RemoteFile> file;
    UniqueFd bmap;
  };
  auto keep = std::make_shared<Keep>();
  keep->file = p.file;
  FetchedImage out{.path = p.file->path(), .report = p.file->report(), .provenance = p.provenance};
  if (p.bmap && p.kind == ImageKind::kRaw) {
    // The checked text, for readers that take a path: an unlinked file.
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
    keep->bmap = UniqueFd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (!keep->bmap.valid()) return ErrnoError(fmt::format("cannot make a temporary file in {}", dir));
    const std::string& text = p.bmap->text;
    FP_RETURN_IF_ERROR(WriteAll(keep->bmap.get(), {reinterpret_cast<const uint8_t*>(text.data()), text.size()}, "bmap"));
    out.bmap = fmt::format("/proc/self/fd/{}", keep->bmap.get());
  }
  out.keep = keep;
  return out;
}

Status CheckFileSha256(const std::string& spec, const std::string& expected) {
  if (spec == "-" || IsPartsSpec(spec)) {
    return Unsupported("--sha256: the image must be a file or a URL (stdin and parts are read once)");
  }
  UniqueFd fd(::open(spec.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot open image {}", spec));
  Sha256 h;
  std::vector<uint8_t> buf(1 << 20);
  for (uint64_t at = 0;;) {
    FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd.get(), buf, at, spec));
    if (n == 0) break;
    h.Update(std::span(buf).first(n));
    at += n;
  }
  std::string got = Sha256::Hex(h.Final());
  if (got == expected) return Status::Ok();
  return Mismatch(fmt::format("{}: SHA-256 is {}, expected {}; nothing written", spec, got, expected));
}

Status ApplySha256Sums(const std::string& sums, const std::string& image, SourceOptions* options) {
  FP_ASSIGN_OR_RETURN(auto text, ReadText(sums, *options, 16 << 20, false));
  if (!text) return NotFound(fmt::format("{} not found", Shown(sums)));
  std::string name = fetch::IsUrl(image) ? fetch::UrlBasename(image) : image;
  FP_ASSIGN_OR_RETURN(std::string hex, fetch::Sha256FromSums(*text, name, Shown(sums)));
  if (!options->fetch.sha256.empty() && options->fetch.sha256 != hex) {
    return InvalidArgument(fmt::format("--sha256 {} and {}'s {} differ", options->fetch.sha256, Shown(sums), hex));
  }
  options->fetch.sha256 = hex;
  return Status::Ok();
}

}  // namespace flashpipe::input
