#include "fetch/http_client.h"


#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "fetch/curl_api.h"
#include "fetch/url.h"

namespace flashpipe::fetch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kPieceBytes = 8 << 20;  // a request asks for at most this much...
constexpr size_t kPieceRanges = 64;         // ...in at most this many ranges
constexpr long kMaxRedirects = 10;

bool Cancelled(const HttpOptions& o) { return o.cancel != nullptr && o.cancel->load(); }

// One HTTP attempt: an easy handle and what its callbacks learnt.
struct Attempt {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  ResponseHead head;
  Status stop;           // why a callback stopped the transfer (not OK: it did)
  bool enough = false;   // a callback stopped it because it had all it wanted
  bool body_started = false;
  std::function<Status(const ResponseHead&)> on_head;  // before the first body byte
  std::function<Status(std::span<const uint8_t>)> on_body;
  const HttpOptions* options = nullptr;
  char errbuf[CURL_ERROR_SIZE] = {};

  Attempt() = default;
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;
  ~Attempt() {
    if (easy != nullptr) Curl().easy_cleanup(easy);
    Curl().slist_free_all(headers);
  }
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  Status s = ParseHeaderLine(std::string_view(data, size * n), &a->head);
  if (!s.ok()) {
    a->stop = s.WithContext("the server's answer");
    return 0;
  }
  return size * n;
}

size_t OnWrite(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  if (!a->stop.ok()) return 0;
  if (!a->body_started) {
    a->body_started = true;
    if (a->on_head) a->stop = a->on_head(a->head);
    if (!a->stop.ok()) return 0;
  }
  if (a->on_body) a->stop = a->on_body({reinterpret_cast<const uint8_t*>(data), size * n});
  return a->stop.ok() && !a->enough ? size * n : 0;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* a = static_cast<Attempt*>(user);
  return Cancelled(*a->options) || !a->stop.ok() ? 1 : 0;
}

std::unique_ptr<Attempt> MakeAttempt(const std::string& url, const HttpOptions& o, const std::vector<std::string>& headers) {
  if (!LoadCurl().ok()) return nullptr;  // the entry points said why (libcurl loads on first use)
  auto a = std::make_unique<Attempt>();
  a->options = &o;
  a->easy = Curl().easy_init();
  if (a->easy == nullptr) return nullptr;
  for (const std::string& h : headers) a->headers = Curl().slist_append(a->headers, h.c_str());
  CURL* e = a->easy;
  Curl().easy_setopt(e, CURLOPT_URL, url.c_str());
  Curl().easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
  Curl().easy_setopt(e, CURLOPT_MAXREDIRS, kMaxRedirects);
  Curl().easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  Curl().easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  Curl().easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout * 1000));
  Curl().easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(std::max<uint64_t>(o.speed_limit, 1)));
  Curl().easy_setopt(e, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(o.speed_time)));
  Curl().easy_setopt(e, CURLOPT_USERAGENT, "flashpipe/" FLASHPIPE_VERSION);
  Curl().easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  Curl().easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  Curl().easy_setopt(e, CURLOPT_BUFFERSIZE, 512L << 10);
  if (!o.cacert.empty()) Curl().easy_setopt(e, CURLOPT_CAINFO, o.cacert.c_str());
  Curl().easy_setopt(e, CURLOPT_HTTPHEADER, a->headers);
  Curl().easy_setopt(e, CURLOPT_HEADERFUNCTION, OnHeader);
  Curl().easy_setopt(e, CURLOPT_HEADERDATA, a.get());
  Curl().easy_setopt(e, CURLOPT_WRITEFUNCTION, OnWrite);
  Curl().easy_setopt(e, CURLOPT_WRITEDATA, a.get());
  Curl().easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  Curl().easy_setopt(e, CURLOPT_XFERINFOFUNCTION, OnProgress);
  Curl().easy_setopt(e, CURLOPT_XFERINFODATA, a.get());
  Curl().easy_setopt(e, CURLOPT_ERRORBUFFER, a->errbuf);
  return a;
}

// Network trouble worth another attempt; anything else (a bad certificate,
// an unknown host, a redirect loop) fails at once.
bool Transient(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT: case CURLE_PARTIAL_FILE: case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
      return true;
    default:
      return false;
  }
}
bool TransientStatus(int status) { return status == 408 || status == 429 || status >= 500; }

// An attempt's outcome as a Status: OK, or transient (kIoError/kTimedOut)
// or final (anything else).
Status Outcome(const Attempt& a, CURLcode code, const std::string& what) {
  if (!a.stop.ok()) return a.stop;
  if (code == CURLE_OK || (code == CURLE_WRITE_ERROR && a.enough)) return Status::Ok();
  if (code == CURLE_ABORTED_BY_CALLBACK) return flashpipe::Cancelled(what + ": cancelled");
  std::string detail = a.errbuf[0] != 0 ? fmt::format("{} ({})", Curl().easy_strerror(code), a.errbuf)
                                         : std::string(Curl().easy_strerror(code));
  if (code == CURLE_OPERATION_TIMEDOUT) return TimedOut(fmt::format("{}: {}", what, detail));
  if (Transient(code)) return IoError(fmt::format("{}: {}", what, detail), 0);
  if (code == CURLE_TOO_MANY_REDIRECTS) return InvalidArgument(fmt::format("{}: more than {} redirects ({})", what, kMaxRedirects, detail));
  return InvalidArgument(fmt::format("{}: {}", what, detail));
}
bool Retryable(const Status& s) { return s.code() == Code::kIoError || s.code() == Code::kTimedOut; }

Status HttpStatusError(int status, const std::string& what) {
  std::string m = fmt::format("{}: the server answered HTTP {}", what, status);
  if (TransientStatus(status)) return IoError(m, 0);
  if (status == 404 || status == 410) return NotFound(m);
  return InvalidArgument(m);
}

Status CheckEncoding(const ResponseHead& h, const std::string& what) {
  if (h.content_encoding.empty() || h.content_encoding == "identity") return Status::Ok();
  return Unsupported(fmt::format("{}: the server sent the file {}-encoded, not its bytes", what, h.content_encoding));
}

void Sleep(double seconds, const HttpOptions& o) {
  auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until && !Cancelled(o)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}
double Backoff(const HttpOptions& o, unsigned failures) {
  return std::min(8.0, o.backoff * static_cast<double>(1u << std::min(failures, 10u)));
}

// One blocking attempt; transient failures are retried `retries` times.
template <typename Setup>
Result<std::unique_ptr<Attempt>> Perform(const HttpOptions& o, const std::string& what, Setup setup) {
  FP_RETURN_IF_ERROR(LoadCurl());
  for (unsigned failures = 0;; ++failures) {
    std::vector<std::string> headers;
    auto a = setup(headers);
    if (a == nullptr) return Internal("curl_easy_init failed");
    CURLcode code = Curl().easy_perform(a->easy);
    Status s = Outcome(*a, code, what);
    if (s.ok() && TransientStatus(a->head.status)) s = HttpStatusError(a->head.status, what);
    if (s.ok() || !Retryable(s) || failures >= o.retries) {
      if (!s.ok()) return s;
      return a;
    }
    Sleep(Backoff(o, failures), o);
    if (Cancelled(o)) return flashpipe::Cancelled(what + ": cancelled");
  }
}

std::string EffectiveUrl(CURL* e, const std::string& fallback) {
  char* u = nullptr;
  return Curl().easy_getinfo(e, CURLINFO_EFFECTIVE_URL, &u) == CURLE_OK && u != nullptr ? std::string(u) : fallback;
}

}  // namespace

Result<RemoteStat> Probe(const std::string& url, const HttpOptions& o, size_t head_bytes) {
  std::string what = DisplayUrl(url);
  std::vector<uint8_t> head;
  auto setup = [&](std::vector<std::string>& headers) {
    head.clear();
    headers.push_back(fmt::format("Range: bytes=0-{}", std::max<size_t>(head_bytes, 1) - 1));
    auto a = MakeAttempt(url, o, headers);
    if (a == nullptr) return a;
    Attempt* raw = a.get();
    a->on_body = [raw, &head, head_bytes](std::span<const uint8_t> d) {
      if (raw->head.status != 200 && raw->head.status != 206) return Status::Ok();
      size_t take = std::min(d.size(), head_bytes - std::min(head_bytes, head.size()));
      head.insert(head.end(), d.begin(), d.begin() + take);
      raw->enough = head.size() >= head_bytes;
      return Status::Ok();
    };
    return a;
  };
  FP_ASSIGN_OR_RETURN(auto a, Perform(o, what, setup));
  const ResponseHead& h = a->head;
  RemoteStat st{.url = url, .effective_url = EffectiveUrl(a->easy, url), .etag = h.etag, .last_modified = h.last_modified};
  st.validator = h.validator();
  FP_RETURN_IF_ERROR(CheckEncoding(h, what));
  if (h.status == 206) {
    if (!h.content_range || !h.content_range->total || !h.content_range->span || h.content_range->span->begin != 0) {
      return Corrupt(fmt::format("{}: a 206 answer without a usable Content-Range", what));
    }
    st.size = *h.content_range->total;
    st.ranges = true;
  } else if (h.status == 200) {
    if (!h.content_length) return Unsupported(fmt::format("{}: the server gives neither the size nor ranges", what));
    st.size = *h.content_length;
  } else if (h.status == 416 && h.content_range && h.content_range->total == 0) {
    st.size = 0;  // an empty file: a range of it cannot be asked
  } else {
    return HttpStatusError(h.status, what);
  }
  st.head = std::move(head);
  if (st.head.size() < std::min<uint64_t>(head_bytes, st.size)) {
    return Corrupt(fmt::format("{}: the answer ended after {} bytes of {}", what, st.head.size(), st.size));
  }
  return st;
}

Result<std::optional<std::string>> GetSmall(const std::string& url, const HttpOptions& o, size_t max_bytes,
                                            bool missing_ok_4xx) {
  std::string what = DisplayUrl(url);
  std::string body;
  auto setup = [&](std::vector<std::string>& headers) {
    body.clear();
    auto a = MakeAttempt(url, o, headers);
    if (a == nullptr) return a;
    Attempt* raw = a.get();
    a->on_body = [raw, &body, max_bytes, what](std::span<const uint8_t> d) {
      if (raw->head.status != 200) return Status::Ok();
      if (body.size() + d.size() > max_bytes) return Corrupt(fmt::format("{}: larger than {} bytes", what, max_bytes));
      body.append(reinterpret_cast<const char*>(d.data()), d.size());
      return Status::Ok();
    };
    return a;
  };
  auto a = Perform(o, what, setup);
  if (!a.ok()) return a.status();
  int status = (*a)->head.status;
  if (status == 200) {
    FP_RETURN_IF_ERROR(CheckEncoding((*a)->head, what));
    return std::optional<std::string>(std::move(body));
  }
  if (status == 404 || status == 410 || (missing_ok_4xx && status >= 400 && status < 500)) {
    return std::optional<std::string>();
  }
  return HttpStatusError(status, what);
}

namespace {

// FetchRanges: requests in order over a curl multi handle.
class Fetcher {
 public:
  Fetcher(const RemoteStat& remote, const std::vector<ByteSpan>& wanted, const HttpOptions& o, RangeSink* sink,
          FetchCounters* counters)
      : remote_(remote), o_(o), sink_(sink), counters_(counters), what_(DisplayUrl(remote.url)) {
    for (const ByteSpan& w : wanted)
      for (uint64_t at = w.begin; at < w.end; at += kPieceBytes) wants_.push_back({at, at, std::min(w.end, at + kPieceBytes)});
    whole_ = !remote.ranges;
    if (whole_) {
      if (!wants_.empty()) queue_.push_back({0, wants_.size()});
    } else {
      Batch();
    }
  }
  ~Fetcher() {
    for (Active& a : active_) Curl().multi_remove_handle(multi_, a.attempt->easy);
    active_.clear();
    if (multi_ != nullptr) Curl().multi_cleanup(multi_);
  }
  Status Run();

 private:
  struct Want {
    uint64_t begin, next, end;
  };
  struct Request {
    size_t first, last;  // wants_[first, last)
    unsigned failures = 0;
    Clock::time_point not_before{};
    Status last_error;
  };
  struct Active {
    Request req;
    std::unique_ptr<Attempt> attempt;
    uint64_t written = 0;  // bytes this attempt gave the sink
    std::optional<uint64_t> body_at;            // single part or whole body: file offset of the next byte
    uint64_t body_end = 0;
    std::unique_ptr<MultipartParser> multipart;
  };

  void Batch() {
    for (size_t i = 0; i < wants_.size();) {
      size_t j = i;
      uint64_t bytes = 0;
      while (j < wants_.size() && j - i < kPieceRanges && (j == i || bytes + wants_[j].end - wants_[j].begin <= kPieceBytes)) {
        bytes += wants_[j].end - wants_[j].begin;
        ++j;
      }
      queue_.push_back({i, j});
      i = j;
    }
  }
  std::vector<ByteSpan> Missing(const Request& r) const {
    std::vector<ByteSpan> spans;
    for (size_t i = r.first; i < r.last; ++i)
      if (wants_[i].next < wants_[i].end) spans.push_back({wants_[i].next, wants_[i].end});
    return spans;
  }
  Status Start(Request req);
  Active* Find(const Attempt* at) {
    for (Active& x : active_)
      if (x.attempt.get() == at) return &x;
    return nullptr;
  }
  Status OnHead(Active* a, const ResponseHead& h);
  Status Accept(Active* a, uint64_t offset, std::span<const uint8_t> data);
  Status OnBody(Active* a, std::span<const uint8_t> data);
  Status Done(size_t index, CURLcode code);
  std::string SpanText(const Request& r) const {
    auto m = Missing(r);
    return m.empty() ? "" : fmt::format("bytes 0x{:x}-0x{:x}", m.front().begin, m.back().end);
  }

  const RemoteStat& remote_;
  const HttpOptions& o_;
  RangeSink* sink_;
  FetchCounters* counters_;
  std::string what_;
  std::vector<Want> wants_;
  std::deque<Request> queue_;
  std::vector<Active> active_;
  CURLM* multi_ = nullptr;
  bool whole_ = false;  // the server sends whole files: one request at a time, no Range
};

Status Fetcher::Start(Request req) {
  std::vector<ByteSpan> spans = Missing(req);
  if (spans.empty()) return Status::Ok();
  std::vector<std::string> headers;
  if (!whole_) {
    headers.push_back("Range: " + RangeHeaderValue(spans));
    if (!remote_.validator.empty()) headers.push_back("If-Range: " + remote_.validator);
  }
  auto attempt = MakeAttempt(remote_.effective_url, o_, headers);
  if (attempt == nullptr) return Internal("curl_easy_init failed");
  active_.push_back({.req = req, .attempt = std::move(attempt)});
  Active* a = &active_.back();
  // Callbacks find their Active by the attempt (active_ moves when it grows).
  Attempt* at = a->attempt.get();
  at->on_head = [this, at](const ResponseHead& h) {
    Active* x = Find(at);
    return x != nullptr ? OnHead(x, h) : Internal("attempt lost");
  };
  at->on_body = [this, at](std::span<const uint8_t> d) {
    Active* x = Find(at);
    return x != nullptr ? OnBody(x, d) : Internal("attempt lost");
  };
  counters_->requests++;
  if (Curl().multi_add_handle(multi_, at->easy) != CURLM_OK) return Internal("curl_multi_add_handle failed");
  return Status::Ok();
}

Status Fetcher::OnHead(Active* a, const ResponseHead& h) {
  FP_RETURN_IF_ERROR(CheckEncoding(h, what_));
  if (h.status != 200 && h.status != 206) return HttpStatusError(h.status, what_);
  auto changed = [&](std::string_view why) {
    return Corrupt(fmt::format("{} changed on the server while it was fetched ({}); nothing of the new version is used",
                               what_, why));
  };
  bool strong = !remote_.etag.empty() && !remote_.etag.starts_with("W/");
  if (strong && h.etag != remote_.etag) {
    return changed(fmt::format("ETag {} then {}", remote_.etag, h.etag.empty() ? "none" : h.etag));
  }
  if (!remote_.last_modified.empty() && h.last_modified != remote_.last_modified) {
    return changed(fmt::format("Last-Modified {} then {}", remote_.last_modified,
                               h.last_modified.empty() ? "none" : h.last_modified));
  }
  if (h.status == 200) {
    if (h.content_length && *h.content_length != remote_.size) {
      return changed(fmt::format("{} bytes then {}", remote_.size, *h.content_length));
    }
    if (!whole_) {
      // The server ignores Range: from now on one request at a time reads
      // the whole file, and this one takes every span still missing.
      whole_ = true;
      counters_->ranges_ignored = true;
      queue_.clear();
      for (Active& x : active_)
        if (&x != a) x.attempt->stop = flashpipe::Cancelled("superseded");
      a->req = {0, wants_.size()};
    }
    a->body_at = 0;
    a->body_end = remote_.size;
    return Status::Ok();
  }
  if (h.content_range && h.content_range->total && *h.content_range->total != remote_.size) {
    return changed(fmt::format("{} bytes then {}", remote_.size, *h.content_range->total));
  }
  if (h.content_range && h.content_range->span) {
    a->body_at = h.content_range->span->begin;
    a->body_end = h.content_range->span->end;
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(std::optional<std::string> boundary, MultipartBoundary(h.content_type));
  if (!boundary) return Corrupt(fmt::format("{}: a 206 answer with neither Content-Range nor multipart parts", what_));
  Attempt* at = a->attempt.get();  // the Active moves when active_ changes
  a->multipart = std::make_unique<MultipartParser>(*boundary, [this, at](uint64_t offset, std::span<const uint8_t> d) {
    Active* x = Find(at);
    return x != nullptr ? Accept(x, offset, d) : Internal("attempt lost");
  });
  return Status::Ok();
}

Status Fetcher::OnBody(Active* a, std::span<const uint8_t> data) {
  counters_->bytes += data.size();
  if (a->multipart) return a->multipart->Feed(data);
  if (!a->body_at) return Internal("body before head");
  if (*a->body_at + data.size() > a->body_end) {
    return Corrupt(fmt::format("{}: the server sent more bytes than its Content-Range (to 0x{:x})", what_, a->body_end));
  }
  uint64_t at = *a->body_at;
  *a->body_at += data.size();
  return Accept(a, at, data);
}

// Bytes at `offset`: each want of the request whose next byte is among them
// takes its share. Others are already here, or were skipped (a retry asks
// for them again).
Status Fetcher::Accept(Active* a, uint64_t offset, std::span<const uint8_t> data) {
  const uint64_t end = offset + data.size();
  auto first = std::lower_bound(wants_.begin() + a->req.first, wants_.begin() + a->req.last, offset,
                                [](const Want& w, uint64_t o) { return w.end <= o; });
  for (auto it = first; it != wants_.begin() + a->req.last && it->begin < end; ++it) {
    if (it->next < offset || it->next >= end || it->next >= it->end) continue;
    uint64_t stop = std::min(end, it->end);
    FP_RETURN_IF_ERROR(sink_->Write(it->next, data.subspan(it->next - offset, stop - it->next)));
    a->written += stop - it->next;
    it->next = stop;
  }
  return Status::Ok();
}

Status Fetcher::Done(size_t index, CURLcode code) {
  Active a = std::move(active_[index]);
  active_.erase(active_.begin() + static_cast<ptrdiff_t>(index));
  Curl().multi_remove_handle(multi_, a.attempt->easy);
  if (a.attempt->stop.code() == Code::kCancelled && !Cancelled(o_)) return Status::Ok();  // superseded by a whole-file read
  std::string where = fmt::format("{}: {}", what_, SpanText(a.req));
  Status s = Outcome(*a.attempt, code, where);
  if (s.ok() && a.multipart) s = a.multipart->Finish().WithContext(where);
  if (!s.ok() && !Retryable(s)) return s.code() == Code::kCancelled ? s : s.WithContext(SpanText(a.req));
  if (Missing(a.req).empty()) return Status::Ok();
  if (s.ok()) s = IoError(fmt::format("{}: the answer ended early", where), 0);
  Request r = a.req;
  r.failures = a.written > 0 ? 1 : r.failures + 1;
  if (a.written > 0) counters_->resumes++;
  if (r.failures > o_.retries) {
    return s.WithContext(fmt::format("gave up after {} attempts in a row without a new byte", r.failures));
  }
  counters_->retries++;
  r.not_before = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(Backoff(o_, r.failures - 1)));
  r.last_error = s;
  if (whole_) r = {0, wants_.size(), r.failures, r.not_before, s};
  queue_.push_front(r);
  return Status::Ok();
}

Status Fetcher::Run() {
  FP_RETURN_IF_ERROR(LoadCurl());
  multi_ = Curl().multi_init();
  if (multi_ == nullptr) return Internal("curl_multi_init failed");
  Curl().multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(std::max(1u, o_.connections)));
  while (!queue_.empty() || !active_.empty()) {
    if (Cancelled(o_)) return flashpipe::Cancelled(fmt::format("{}: fetch cancelled", what_));
    size_t limit = whole_ ? 1 : std::max(1u, o_.connections);
    while (active_.size() < limit && !queue_.empty() && queue_.front().not_before <= Clock::now()) {
      Request r = queue_.front();
      queue_.pop_front();
      FP_RETURN_IF_ERROR(Start(r));
    }
    int running = 0;
    Curl().multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* m = Curl().multi_info_read(multi_, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      for (size_t i = 0; i < active_.size(); ++i) {
        if (active_[i].attempt->easy != m->easy_handle) continue;
        FP_RETURN_IF_ERROR(Done(i, m->data.result));
        break;
      }
    }
    Curl().multi_poll(multi_, nullptr, 0, 50, nullptr);
  }
  for (const Want& w : wants_) {
    if (w.next < w.end) return Internal(fmt::format("{}: bytes 0x{:x}-0x{:x} never arrived", what_, w.next, w.end));
  }
  return Status::Ok();
}

}  // namespace

Status FetchRanges(const RemoteStat& remote, const std::vector<ByteSpan>& wanted, const HttpOptions& options,
                   RangeSink* sink, FetchCounters* counters) {
  Fetcher f(remote, wanted, options, sink, counters);
  return f.Run();
}

}  // namespace flashpipe::fetch
