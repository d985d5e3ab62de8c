// RemoteFile: a file at an http(s) URL, read from its cache entry
// (cache.h) while the bytes a run needs are fetched into it.
//
//   auto f = RemoteFile::Open(url, options);        // probe: size, validator, first bytes
//   f->Start({{0, f->stat().size}});                // what the run will read
//   f->WaitFor(begin, end); pread(f->fd(), ...);    // any thread: blocks until here
//   f->Finish();                                    // all here, indexed, SHA-256 checked
//
// Start fetches on a thread of its own what the entry lacks. When another
// process is already fetching into the same entry (its fetch lock), this
// one follows that fetch through the entry's index and takes over when the
// lock comes free (that process ended or was killed): concurrent runs
// download a file once, and a run killed mid-download leaves what it
// indexed for the next one. Bytes go to the entry as they arrive (all-zero
// 4 KiB blocks left as holes) and waiters are woken; the index is saved
// every 16 MiB or second and at the end (after fdatasync).
// options.sha256: the whole file's expected digest. It is computed while the
// bytes arrive, in order, and compared once all are here; Finish() fails
// (kMismatch) when it differs, and the entry is emptied. An entry whose
// index already records that digest is not hashed again.
// Thread-safe: WaitFor/Finish from any thread; the destructor stops the
// fetch and waits for its thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/cancel.h"
#include "base/sha256.h"
#include "fetch/cache.h"
#include "fetch/http_client.h"
#include "fetch/span_set.h"

namespace flashpipe::fetch {

struct FetchOptions {
  HttpOptions http;
  CacheOptions cache;
  std::string sha256;                  // lowercase hex, "" = none expected
  const CancelFlag* cancel = nullptr;  // a signal: waits end with kCancelled
};

// What a fetch did, for notes and --json.
struct FetchReport {
  std::string url;             // DisplayUrl
  uint64_t size = 0;           // the file's
  uint64_t needed = 0;         // bytes of it the run reads
  uint64_t from_cache = 0;     // of those, in the entry before the run
  uint64_t fetched = 0;        // body bytes this process received (the probe's too)
  uint64_t requests = 0, retries = 0, resumes = 0;
  bool ranges = false;         // asked by Range (the server serves them)
  bool ranges_ignored = false; // the server answered a Range request with the whole file
  std::string cache = "off";   // "hit", "partial", "miss", "off"
  bool shared = false;         // another process fetched some of it
  std::string sha256;          // the whole file's, when computed or recorded
  bool sha256_checked = false; // compared with FetchOptions::sha256
  std::string entry;           // the cache key
  double seconds = 0;          // from Start to the last byte
};

// The report as a JSON object (the "download" of write's and flash's
// --json), and one line for people: "fetched 200.0 MiB of 1.0 GiB in 2.1 s
// (95.2 MiB/s, 4 connections, by range), cache miss, 1 resume".
std::string FetchReportJson(const FetchReport& r);
std::string FetchSummary(const FetchReport& r);

class RemoteFile : public RangeSink {
 public:
  static constexpr size_t kHeadBytes = 64 << 10;
  static Result<std::unique_ptr<RemoteFile>> Open(const std::string& url, const FetchOptions& options);
  ~RemoteFile() override;

  const RemoteStat& stat() const { return stat_; }
  const std::string& name() const { return name_; }  // DisplayUrl
  int fd() const { return entry_->fd(); }
  const std::string& path() const { return entry_->path(); }
  bool cached() const { return entry_->cached(); }

  // Starts making `wanted` (sorted, disjoint, inside the file) present.
  // Called once.
  Status Start(std::vector<ByteSpan> wanted);
  // Every wanted byte is present (and checked) now: no fetch is running.
  bool complete() const;
  // Blocks until [begin, end) is present; the fetch's error if it failed.
  Status WaitFor(uint64_t begin, uint64_t end);
  // Blocks until the byte at `pos` is present; returns the end of the
  // stretch present from it, at most `limit`.
  Result<uint64_t> WaitSome(uint64_t pos, uint64_t limit);
  // Waits for the fetch to end: its status, the SHA-256 check included.
  Status Finish();
  // Ends the fetch early (its reader gave up): waiters get kCancelled.
  void Stop() { stop_ = true; }
  FetchReport report() const;

  Status Write(uint64_t offset, std::span<const uint8_t> data) override;

 private:
  RemoteFile() = default;
  void Run();
  Status FetchAsOwner();
  Status CheckDigest();
  void Hash(uint64_t upto);
  Status Checkpoint(bool final);
  Status WaitUntil(const std::function<bool()>& ready);

  FetchOptions options_;
  RemoteStat stat_;
  std::string name_;
  std::unique_ptr<Entry> entry_;
  std::vector<ByteSpan> wanted_;
  EntryMeta meta_;  // as loaded; spans_ is the live list

  mutable std::mutex mu_;
  std::condition_variable cv_;
  SpanSet spans_;
  bool done_ = false;
  Status status_;
  uint64_t unsaved_ = 0;  // bytes added since the index was last saved
  std::chrono::steady_clock::time_point saved_at_ = std::chrono::steady_clock::now();

  std::optional<Sha256> hash_;  // set when a digest is to be computed
  uint64_t hashed_ = 0;
  std::string digest_;

  std::atomic<bool> stop_{false};
  FetchCounters counters_;
  FetchReport report_;
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;
};

}  // namespace flashpipe::fetch
