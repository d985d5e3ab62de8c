// The HTTP(S) client, on libcurl: the one place flashpipe talks to a server.
//
//   Probe       one GET of the file's first bytes with a Range header: its
//               size, its validator (strong ETag, else Last-Modified), whether
//               the server serves ranges, and those first bytes.
//   GetSmall    a whole small file (a bmap, a signature, SHA256SUMS), bounded.
//   FetchRanges the byte spans of a file, delivered to a RangeSink at their
//               offsets: several ranges per request (multipart/byteranges)
//               on several connections at once, the next requests in flight
//               while earlier ones arrive; large spans are cut so that every
//               connection has work.
//
// Every request: TLS with the system CA store or `cacert`; proxies from the
// environment (http_proxy, https_proxy, no_proxy, as libcurl reads them);
// redirects followed (at most 10; a loop fails); only http and https, also
// after a redirect; a connect timeout; a stall limit (fewer than
// `speed_limit` bytes/s for `speed_time` ends the attempt); no content
// coding (the bytes must be the file's).
//
// Failures: an attempt that breaks (connection dropped, stalled, 5xx, 408,
// 429, fewer bytes than promised) is tried again after a backoff (0.25 s,
// doubled, at most 8 s) from the first byte still missing, with Range and
// If-Range; `retries` attempts in a row that bring no new byte end the
// fetch with what and where. Every answer is checked against the probe: its
// validator and total size must be the same (else the file changed on the
// server: kCorrupt, nothing of the new version is used), its Content-Range
// must cover what it sends. A server that answers a Range request with the
// whole file (200) is read from the start and what is needed is taken
// (ranges_ignored says so). Wrong host names and bad certificates fail at
// once, as do 4xx answers other than 408/429.
// Thread-compatible: each call runs on the caller's thread; `cancel` may be
// set from any thread and ends a call within ~0.1 s (kCancelled).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "fetch/http_parse.h"

namespace flashpipe::fetch {

struct HttpOptions {
  std::string cacert;           // PEM CA bundle; "" = the system store
  double connect_timeout = 15;  // seconds
  uint64_t speed_limit = 1024;  // bytes/s ...
  double speed_time = 20;       // ... for this many seconds ends an attempt
  unsigned retries = 5;         // attempts in a row without progress
  unsigned connections = 4;     // at once, per fetch
  double backoff = 0.25;        // seconds before the first retry
  const std::atomic<bool>* cancel = nullptr;
};

// What the probe learnt about the file at a URL.
struct RemoteStat {
  std::string url;            // as given
  std::string effective_url;  // after redirects: where ranges are asked
  uint64_t size = 0;
  std::string etag, last_modified;
  std::string validator;      // RemoteValidator(): "" when there is none
  bool ranges = false;        // it answered 206 to a Range request
  std::vector<uint8_t> head;  // the first bytes (up to what Probe was asked)
};

Result<RemoteStat> Probe(const std::string& url, const HttpOptions& options, size_t head_bytes);

// The body of `url` when the server answers 200; nullopt for 404/410 (and
// for any 4xx when `missing_ok_4xx`: a name tried beside an image). More
// than `max_bytes` is kCorrupt.
Result<std::optional<std::string>> GetSmall(const std::string& url, const HttpOptions& options, size_t max_bytes,
                                            bool missing_ok_4xx = false);

// Where fetched bytes go. Called on the fetching thread, each call's bytes
// in file order within a span; spans arrive in any order.
class RangeSink {
 public:
  virtual ~RangeSink() = default;
  virtual Status Write(uint64_t offset, std::span<const uint8_t> data) = 0;
};

struct FetchCounters {
  std::atomic<uint64_t> bytes{0};     // body bytes received (also unused ones)
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> retries{0};   // attempts after a failed one
  std::atomic<uint64_t> resumes{0};   // retries that went on from a byte already received
  std::atomic<bool> ranges_ignored{false};
};

// Fetches `wanted` (sorted, disjoint, inside remote.size) into `sink`.
Status FetchRanges(const RemoteStat& remote, const std::vector<ByteSpan>& wanted, const HttpOptions& options,
                   RangeSink* sink, FetchCounters* counters);

}  // namespace flashpipe::fetch
