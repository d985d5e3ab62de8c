#include "input/image_digest.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "base/fd_io.h"
#include "input/bmap.h"

namespace flashpipe::input {
namespace {

constexpr size_t kSlice = 1 << 20;
constexpr size_t kMaxQueuedBytes = 64 << 20;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Job {
  enum Kind : uint8_t { kData, kFill, kFile, kEnd } kind = kData;
  uint64_t offset = 0, length = 0;
  uint32_t pattern = 0;
  int fd = -1;
  uint64_t in_offset = 0;
  std::vector<uint8_t> bytes;
};

}  // namespace

struct ImageDigest::Impl {
  explicit Impl(Digest d) : sha(std::move(d)) {}

  // Producer side.
  bool Accept(uint64_t offset, uint64_t length) {
    if (!in_order) return false;
    if (offset < next) {
      in_order = false;  // overlaid parts: no single expanded content to hash
      return false;
    }
    next = offset + length;
    return true;
  }
  void Push(Job job) {
    std::unique_lock lock(mu);
    if (queued > kMaxQueuedBytes) {
      Clock::time_point t = Clock::now();
      space.wait(lock, [&] { return queued <= kMaxQueuedBytes || stop; });
      waited += Since(t);
    }
    queued += job.bytes.size();
    jobs.push_back(std::move(job));
    ready.notify_one();
  }

  // Consumer side (the thread).
  void Loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu);
        ready.wait(lock, [&] { return !jobs.empty() || stop; });
        if (stop) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      bool end = job.kind == Job::kEnd;
      Clock::time_point t = Clock::now();
      Hash(job);
      busy += Since(t);
      std::unique_lock lock(mu);
      queued -= job.bytes.size();
      if (job.bytes.capacity() > 0 && spare.size() < kSpares) spare.push_back(std::move(job.bytes));
      space.notify_one();
      if (end) return;
    }
  }
  void Hash(const Job& job) {
    if (job.offset < hashed) {
      hash_ok = false;
      return;
    }
    HashPattern(0, job.offset - hashed);
    switch (job.kind) {
      case Job::kData: Update(job.bytes); break;
      case Job::kFill: HashPattern(job.pattern, job.length); break;
      case Job::kFile: HashFile(job.fd, job.in_offset, job.length); break;
      case Job::kEnd: break;
    }
  }
  void Update(std::span<const uint8_t> bytes) {
    sha.Update(bytes);
    hashed += bytes.size();
  }
  void HashPattern(uint32_t pattern, uint64_t length) {
    if (length == 0) return;
    if (!pattern_valid || pattern_value != pattern) {
      uint8_t p[4];
      std::memcpy(p, &pattern, 4);  // FILL patterns are little-endian, as on the medium
      for (size_t i = 0; i < kSlice; i += 4) std::memcpy(pattern_buf.data() + i, p, 4);
      pattern_value = pattern;
      pattern_valid = true;
    }
    for (uint64_t left = length; left > 0;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, kSlice));
      Update({pattern_buf.data(), n});
      left -= n;
    }
  }
  void HashFile(int fd, uint64_t at, uint64_t length) {
    while (length > 0 && hash_ok) {
      auto piece = std::span(file_buf).first(static_cast<size_t>(std::min<uint64_t>(length, kSlice)));
      auto r = PreadUpTo(fd, piece, at, "the image");
      if (!r.ok() || *r == 0) {
        hash_ok = false;
        return;
      }
      Update(piece.first(*r));
      at += *r;
      length -= *r;
    }
  }

  // A buffer for n bytes of Data, reused from a finished job when one is spare.
  std::vector<uint8_t> Buffer(std::span<const uint8_t> data) {
    std::vector<uint8_t> b;
    {
      std::lock_guard lock(mu);
      if (!spare.empty()) {
        b = std::move(spare.back());
        spare.pop_back();
      }
    }
    b.assign(data.begin(), data.end());
    return b;
  }

  static constexpr size_t kSpares = 64;
  std::mutex mu;
  std::condition_variable ready, space;
  std::deque<Job> jobs;
  std::vector<std::vector<uint8_t>> spare;
  size_t queued = 0;
  double waited = 0;  // producer side
  double busy = 0;    // the thread's hashing time
  bool stop = false;
  uint64_t next = 0;
  bool in_order = true;

  Digest sha;
  uint64_t hashed = 0;
  bool hash_ok = true;
  std::vector<uint8_t> pattern_buf = std::vector<uint8_t>(kSlice), file_buf = std::vector<uint8_t>(kSlice);
  uint32_t pattern_value = 0;
  bool pattern_valid = false;
  std::thread thread;
};

ImageDigest::ImageDigest(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<ImageDigest>> ImageDigest::Start() {
  FP_ASSIGN_OR_RETURN(Digest sha, Digest::Create("sha256"));
  auto impl = std::make_unique<Impl>(std::move(sha));
  Impl* m = impl.get();
  m->thread = std::thread([m] { m->Loop(); });
  return std::unique_ptr<ImageDigest>(new ImageDigest(std::move(impl)));
}

ImageDigest::~ImageDigest() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->ready.notify_all();
  impl_->space.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void ImageDigest::Data(uint64_t offset, std::span<const uint8_t> data) {
  if (data.empty() || !impl_->Accept(offset, data.size())) return;
  Job job{.kind = Job::kData, .offset = offset, .length = data.size()};
  job.bytes = impl_->Buffer(data);
  impl_->Push(std::move(job));
}

void ImageDigest::Fill(uint64_t offset, uint64_t length, uint32_t pattern) {
  if (length == 0 || !impl_->Accept(offset, length)) return;
  impl_->Push({.kind = Job::kFill, .offset = offset, .length = length, .pattern = pattern});
}

void ImageDigest::FileRange(uint64_t offset, int fd, uint64_t in_offset, uint64_t length) {
  if (length == 0 || !impl_->Accept(offset, length)) return;
  impl_->Push({.kind = Job::kFile, .offset = offset, .length = length, .fd = fd, .in_offset = in_offset});
}

std::optional<std::string> ImageDigest::Finish(uint64_t size) {
  Impl& m = *impl_;
  if (!m.in_order || m.next > size) return std::nullopt;  // the destructor stops the thread
  Clock::time_point t = Clock::now();
  m.Push({.kind = Job::kEnd, .offset = size});
  if (m.thread.joinable()) m.thread.join();
  m.waited += Since(t);
  if (!m.hash_ok || m.hashed != size) return std::nullopt;
  return m.sha.HexFinal();
}

double ImageDigest::waited() const { return impl_->waited; }

double ImageDigest::bytes_per_second() const {
  return impl_->busy > 0 ? static_cast<double>(impl_->hashed) / impl_->busy : 0;
}

}  // namespace flashpipe::input
