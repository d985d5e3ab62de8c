#include "fetch/remote_file.h"

#include <unistd.h>

#include <algorithm>

#include "base/fd_io.h"
#include "base/json.h"
#include "base/units.h"
#include "base/zero.h"
#include "fetch/url.h"

namespace flashpipe::fetch {
namespace {

constexpr uint64_t kSaveEvery = 16 << 20;  // the index is saved after this many new bytes...
constexpr auto kSaveAfter = std::chrono::seconds(1);  // ...or this long
constexpr uint64_t kBlock = 4096;
constexpr auto kPoll = std::chrono::milliseconds(100);

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string FetchReportJson(const FetchReport& r) {
  return fmt::format(
      "{{\"url\": {}, \"size\": {}, \"bytes_needed\": {}, \"bytes_from_cache\": {}, \"bytes_fetched\": {}, "
      "\"requests\": {}, \"retries\": {}, \"resumes\": {}, \"ranges\": {}, \"ranges_ignored\": {}, "
      "\"cache\": {}, \"cache_entry\": {}, \"shared\": {}, \"sha256\": {}, \"sha256_checked\": {}, "
      "\"seconds\": {:.3f}}}",
      JsonString(r.url), r.size, r.needed, r.from_cache, r.fetched, r.requests, r.retries, r.resumes, r.ranges,
      r.ranges_ignored, JsonString(r.cache), r.entry.empty() ? "null" : JsonString(r.entry), r.shared,
      r.sha256.empty() ? "null" : JsonString(r.sha256), r.sha256_checked, r.seconds);
}

std::string FetchSummary(const FetchReport& r) {
  std::string how = r.ranges_ignored ? "the server ignored Range: whole file" : r.ranges ? "by range" : "whole file, no Range support";
  std::string line = fmt::format("fetched {} of {} in {:.1f} s ({}), cache {}", FormatBytes(r.fetched),
                                 FormatBytes(r.needed), r.seconds, how, r.cache);
  if (r.from_cache > 0) line += fmt::format(" ({} from the cache)", FormatBytes(r.from_cache));
  if (r.shared) line += ", shared with another run";
  if (r.resumes > 0) line += fmt::format(", {} resume{}", r.resumes, r.resumes == 1 ? "" : "s");
  if (r.sha256_checked) line += ", SHA-256 checked";
  return line;
}

Result<std::unique_ptr<RemoteFile>> RemoteFile::Open(const std::string& url, const FetchOptions& options) {
  std::unique_ptr<RemoteFile> f(new RemoteFile());
  f->options_ = options;
  f->options_.http.cancel = &f->stop_;
  f->name_ = DisplayUrl(url);
  FP_ASSIGN_OR_RETURN(f->stat_, Probe(url, f->options_.http, kHeadBytes));
  FP_ASSIGN_OR_RETURN(f->entry_, Entry::Open(options.cache, f->stat_));
  f->report_.url = f->name_;
  f->report_.size = f->stat_.size;
  f->report_.entry = f->entry_->cached() ? f->entry_->key() : "";
  f->report_.ranges = f->stat_.ranges;
  return f;
}

RemoteFile::~RemoteFile() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

Status RemoteFile::Start(std::vector<ByteSpan> wanted) {
  wanted_ = std::move(wanted);
  start_ = std::chrono::steady_clock::now();
  meta_ = entry_->Load();
  spans_ = SpanSet(meta_.spans);
  for (const ByteSpan& w : wanted_) report_.needed += w.size();
  report_.from_cache = spans_.Held(wanted_);
  report_.cache = !entry_->cached()                        ? "off"
                  : report_.from_cache == report_.needed   ? "hit"
                  : report_.from_cache > 0                 ? "partial"
                                                           : "miss";
  bool whole = report_.needed == stat_.size;
  if (!options_.sha256.empty()) {
    if (!whole) return InvalidArgument(fmt::format("{}: a SHA-256 of the file needs all of it fetched", name_));
    if (meta_.sha256 == options_.sha256) {
      report_.sha256 = meta_.sha256;
      report_.sha256_checked = true;
    } else {
      hash_.emplace();
    }
  } else if (whole) {
    report_.sha256 = meta_.sha256;
  }
  if (spans_.Missing(wanted_).empty() && !hash_) {
    done_ = true;
    return Status::Ok();
  }
  thread_ = std::thread(&RemoteFile::Run, this);
  return Status::Ok();
}

bool RemoteFile::complete() const {
  std::lock_guard l(mu_);
  return done_ && status_.ok();
}

void RemoteFile::Run() {
  Status s;
  for (;;) {
    if (stop_) {
      s = Cancelled(fmt::format("{}: fetch stopped", name_));
      break;
    }
    if (entry_->TryLockFetch()) {
      s = FetchAsOwner();
      break;
    }
    // Another process fetches into this entry: follow its index.
    EntryMeta m = entry_->Load();
    bool all = false;
    {
      std::lock_guard l(mu_);
      report_.shared = true;
      for (const ByteSpan& sp : m.spans) spans_.Add(sp);
      all = spans_.Missing(wanted_).empty();
    }
    cv_.notify_all();
    if (all) break;
    std::this_thread::sleep_for(kPoll);
  }
  if (s.ok()) s = CheckDigest();
  {
    std::lock_guard l(mu_);
    done_ = true;
    status_ = s;
    report_.seconds = Since(start_);
  }
  cv_.notify_all();
}

Status RemoteFile::FetchAsOwner() {
  EntryMeta m = entry_->Load();  // what an earlier owner left
  std::vector<ByteSpan> missing;
  {
    std::lock_guard l(mu_);
    for (const ByteSpan& sp : m.spans) spans_.Add(sp);
    missing = spans_.Missing(wanted_);
    // Another process that held the lock since Start() fetched some of it.
    if (spans_.Held(wanted_) > report_.from_cache) report_.shared = true;
  }
  cv_.notify_all();
  if (!m.sha256.empty()) meta_.sha256 = m.sha256;
  Status s = missing.empty() ? Status::Ok() : FetchRanges(stat_, missing, options_.http, this, &counters_);
  Status saved = Checkpoint(s.ok());
  if (!s.ok()) return s;
  FP_RETURN_IF_ERROR(saved);
  if (entry_->cached()) (void)CollectCache(entry_->dir(), options_.cache.max_bytes);
  return Status::Ok();
}

Status RemoteFile::Write(uint64_t offset, std::span<const uint8_t> data) {
  // All-zero blocks stay holes: the entry file was made of holes.
  auto piece_end = [&](size_t a) { return std::min<size_t>(data.size(), a + kBlock - (offset + a) % kBlock); };
  auto zero_block = [&](size_t a) {
    return (offset + a) % kBlock == 0 && piece_end(a) - a == kBlock && IsAllZero(data.subspan(a, kBlock));
  };
  for (size_t at = 0; at < data.size();) {
    if (zero_block(at)) {
      at += kBlock;
      continue;
    }
    size_t end = piece_end(at);
    while (end < data.size() && !zero_block(end)) end = piece_end(end);
    FP_RETURN_IF_ERROR(PwriteAll(entry_->fd(), data.subspan(at, end - at), offset + at, path()));
    at = end;
  }
  bool save = false;
  uint64_t contiguous = 0;
  {
    std::lock_guard l(mu_);
    spans_.Add({offset, offset + data.size()});
    unsaved_ += data.size();
    auto now = std::chrono::steady_clock::now();
    save = unsaved_ >= kSaveEvery || now - saved_at_ >= kSaveAfter;
    if (save) saved_at_ = now;
    if (hash_ && offset == hashed_) {
      hash_->Update(data);
      hashed_ += data.size();
    }
    contiguous = spans_.ContiguousEnd(hashed_);
  }
  cv_.notify_all();
  // Bytes that came on other connections, once the stretch reaches them.
  if (hash_ && contiguous > hashed_) Hash(std::min(contiguous, hashed_ + (uint64_t{8} << 20)));
  if (save) FP_RETURN_IF_ERROR(Checkpoint(false));
  return Status::Ok();
}

// Hashes the entry's bytes from hashed_ up to `upto` (all present).
void RemoteFile::Hash(uint64_t upto) {
  std::vector<uint8_t> buf(1 << 20);
  while (hashed_ < upto) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), upto - hashed_));
    auto got = PreadUpTo(entry_->fd(), std::span(buf).first(n), hashed_, path());
    if (!got.ok() || *got == 0) return;
    hash_->Update(std::span(buf).first(*got));
    hashed_ += *got;
  }
}

Status RemoteFile::CheckDigest() {
  if (!hash_) return Status::Ok();
  Hash(stat_.size);
  if (hashed_ != stat_.size) return Internal(fmt::format("{}: hashed {} of {} bytes", name_, hashed_, stat_.size));
  digest_ = Sha256::Hex(hash_->Final());
  {
    std::lock_guard l(mu_);
    report_.sha256 = digest_;
    report_.sha256_checked = true;
  }
  if (digest_ != options_.sha256) {
    if (entry_->TryLockFetch()) (void)entry_->Discard();
    return Mismatch(fmt::format("{}: SHA-256 is {}, expected {}; the cache entry was emptied", name_, digest_,
                                options_.sha256));
  }
  meta_.sha256 = digest_;
  if (entry_->TryLockFetch()) FP_RETURN_IF_ERROR(Checkpoint(true));
  return Status::Ok();
}

Status RemoteFile::Checkpoint(bool final) {
  EntryMeta m{.url = name_, .size = stat_.size, .etag = stat_.etag, .last_modified = stat_.last_modified};
  {
    std::lock_guard l(mu_);
    m.spans = spans_.spans();
    unsaved_ = 0;
  }
  if (m.spans.size() == 1 && m.spans[0] == ByteSpan{0, stat_.size}) m.sha256 = meta_.sha256;
  return entry_->Save(m, final);
}

Status RemoteFile::WaitUntil(const std::function<bool()>& ready) {
  std::unique_lock l(mu_);
  while (!ready()) {
    if (done_) return status_.ok() ? Internal(fmt::format("{}: bytes asked that were not fetched", name_)) : status_;
    if (options_.cancel != nullptr && options_.cancel->cancelled()) {
      stop_ = true;
      return options_.cancel->Check();
    }
    cv_.wait_for(l, kPoll);
  }
  return Status::Ok();
}

Status RemoteFile::WaitFor(uint64_t begin, uint64_t end) {
  return WaitUntil([&] { return spans_.Contains({begin, end}); });
}

Result<uint64_t> RemoteFile::WaitSome(uint64_t pos, uint64_t limit) {
  FP_RETURN_IF_ERROR(WaitUntil([&] { return spans_.ContiguousEnd(pos) > pos; }));
  std::lock_guard l(mu_);
  return std::min(spans_.ContiguousEnd(pos), limit);
}

Status RemoteFile::Finish() {
  FP_RETURN_IF_ERROR(WaitUntil([&] { return done_; }));
  if (thread_.joinable()) thread_.join();
  std::lock_guard l(mu_);
  return status_;
}

FetchReport RemoteFile::report() const {
  std::lock_guard l(mu_);
  FetchReport r = report_;
  r.fetched = counters_.bytes + stat_.head.size();  // the probe's bytes too
  r.requests = counters_.requests;
  r.retries = counters_.retries;
  r.resumes = counters_.resumes;
  r.ranges_ignored = counters_.ranges_ignored;
  r.ranges = stat_.ranges && !r.ranges_ignored;
  if (!done_) r.seconds = Since(start_);
  return r;
}

}  // namespace flashpipe::fetch
