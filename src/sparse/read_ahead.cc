#include "sparse/read_ahead.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/fd_io.h"
#include "base/page_cache.h"

namespace flashpipe::sparse {
namespace {

constexpr uint64_t kDirectAlign = 4096;

uint64_t RoundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

RangeSource ReadAhead::OneRange(uint64_t offset, uint64_t length) {
  return [range = std::optional<ByteRange>(ByteRange{offset, length})]() mutable -> Result<std::optional<ByteRange>> {
    return std::exchange(range, std::nullopt);
  };
}

ReadAhead::ReadAhead(int fd, std::string name, RangeSource ranges, ReadAheadOptions options)
    : ReadAhead(fd, std::move(name), std::move(ranges), false, options) {}

std::unique_ptr<ReadAhead> ReadAhead::Stream(int fd, std::string name, uint64_t position, ReadAheadOptions options) {
  return std::unique_ptr<ReadAhead>(
      new ReadAhead(fd, std::move(name), OneRange(position, kToEof), true, options));
}

ReadAhead::ReadAhead(int fd, std::string name, RangeSource ranges, bool stream, ReadAheadOptions options)
    : fd_(fd), name_(std::move(name)), ranges_(std::move(ranges)), stream_(stream), options_(options) {
  struct stat st;
  if (!stream_ && options_.direct && ::fstat(fd_, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
    std::string self = fmt::format("/proc/self/fd/{}", fd_);
    direct_fd_ = UniqueFd(::open(self.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
  }
  int buffers = std::max(options_.buffers, 2);
  int threads = direct_fd_.valid() ? std::clamp(options_.threads, 1, buffers - 1) : 1;
  slots_.resize(static_cast<size_t>(buffers));
  for (Slot& s : slots_) s.buf = PipeBuffer(RoundUp(std::max<size_t>(options_.buffer_size, 1), kDirectAlign));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  to_readers_.notify_all();
  for (std::thread& t : threads_) t.join();
}

uint64_t ReadAhead::direct_bytes() const {
  std::lock_guard lock(mu_);
  return direct_bytes_;
}

uint64_t ReadAhead::cached_bytes() const {
  std::lock_guard lock(mu_);
  return cached_bytes_;
}

// Makes range_ a range with bytes left to claim; false when there is none
// (sources_done_ is set then, and a failed source's error takes `free`, in
// the place of the piece that would have come next).
bool ReadAhead::NextRangeLocked(Slot& free) {
  if (range_ && range_->length > 0) return true;
  range_.reset();
  for (;;) {
    Result<std::optional<ByteRange>> next = ranges_();
    if (next.ok() && next->has_value() && (*next)->length == 0) continue;
    if (next.ok() && next->has_value()) {
      range_ = **next;
      ++range_index_;
      return true;
    }
    sources_done_ = true;
    if (!next.ok()) {
      free.state = Slot::State::kReady;
      free.seq = next_claim_++;
      free.want = free.got = 0;
      free.status = next.status();
    }
    return false;
  }
}

ReadAhead::Claim ReadAhead::ClaimLocked() {
  auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == Slot::State::kFree; });
  if (!stop_ && !sources_done_ && free == slots_.end()) return {};  // wait for the consumer
  if (stop_ || sources_done_ || !NextRangeLocked(*free)) {
    to_consumer_.notify_one();
    return {nullptr, true};
  }
  // A range that starts off the O_DIRECT alignment gets a shorter first
  // piece, so that the pieces after it are aligned.
  size_t room = free->buf.size() - (stream_ ? 0 : static_cast<size_t>(range_->offset % kDirectAlign));
  size_t want = static_cast<size_t>(std::min<uint64_t>(range_->length, room));
  free->state = Slot::State::kReading;
  free->seq = next_claim_++;
  free->range = range_index_;
  free->offset = range_->offset;
  free->want = want;
  free->got = 0;
  free->status = Status::Ok();
  range_->offset += want;
  range_->length -= want;
  return {&*free, false};
}

void ReadAhead::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    Claim c = ClaimLocked();
    if (c.end) return;
    if (c.slot == nullptr) {
      to_readers_.wait(lock);
      continue;
    }
    lock.unlock();
    Read(*c.slot);
    lock.lock();
    Slot& s = *c.slot;
    s.state = Slot::State::kReady;
    // End of file (or an error): nothing more of this range is claimed.
    if ((s.got < s.want || !s.status.ok()) && s.range == range_index_) range_.reset();
    if (!s.status.ok()) sources_done_ = true;
    to_consumer_.notify_one();
  }
}

void ReadAhead::Read(Slot& s) {
  s.status = stream_ ? ReadStream(s) : ReadFile(s);
}

Status ReadAhead::ReadStream(Slot& s) {
  FP_ASSIGN_OR_RETURN(s.got, ReadUpTo(fd_, {s.buf.data(), s.want}, name_, s.offset));
  return Status::Ok();
}

bool ReadAhead::WantDirect(uint64_t offset, size_t length) {
  if (!direct_fd_.valid() || offset % kDirectAlign != 0) return false;
  {
    std::lock_guard lock(mu_);
    if (!direct_ok_) return false;
  }
  return !MostlyCached(fd_, offset, length);  // base/page_cache.h
}

Status ReadAhead::ReadFile(Slot& s) {
  size_t done = 0;
  if (WantDirect(s.offset, s.want)) {
    size_t len = static_cast<size_t>(RoundUp(s.want, kDirectAlign));
    ssize_t n = RetryOnEintr([&] { return ::pread(direct_fd_.get(), s.buf.data(), len, static_cast<off_t>(s.offset)); });
    if (n < 0 && errno != EINVAL) return ErrnoError(fmt::format("read {} at byte 0x{:x}", name_, s.offset));
    std::lock_guard lock(mu_);
    if (n < 0) {
      direct_ok_ = false;  // this file or device refuses O_DIRECT reads: use the cache from now on
    } else {
      done = std::min(static_cast<size_t>(n), s.want);
      direct_bytes_ += done;
    }
  }
  // The rest through the cache: a piece not fit for O_DIRECT, or the bytes
  // after a short O_DIRECT read (end of file is found there).
  FP_ASSIGN_OR_RETURN(size_t rest, PreadUpTo(fd_, {s.buf.data() + done, s.want - done}, s.offset + done, name_));
  s.got = done + rest;
  if (rest > 0) {
    std::lock_guard lock(mu_);
    cached_bytes_ += rest;
  }
  return Status::Ok();
}

Result<ReadAhead::Piece> ReadAhead::Next() {
  std::unique_lock lock(mu_);
  if (lent_ != nullptr) {
    lent_->state = Slot::State::kFree;
    lent_ = nullptr;
    to_readers_.notify_one();
  }
  if (!failed_.ok()) return failed_;
  for (;;) {
    auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) {
      return s.state == Slot::State::kReady && s.seq == next_out_;
    });
    if (it == slots_.end()) {
      if (sources_done_ && next_out_ == next_claim_) return Piece{end_, {}};
      to_consumer_.wait(lock);
      continue;
    }
    Slot& s = *it;
    ++next_out_;
    bool keep = s.status.ok() && s.range != dropped_range_ && s.got > 0;
    if (!s.status.ok()) failed_ = s.status;
    if (s.got < s.want) dropped_range_ = s.range;  // end of file: the rest of its range is void
    if (!keep) {
      s.state = Slot::State::kFree;
      to_readers_.notify_one();
      if (!failed_.ok()) return failed_;
      continue;
    }
    lent_ = &s;
    end_ = s.offset + s.got;
    return Piece{s.offset, {s.buf.data(), s.got}};
  }
}

}  // namespace flashpipe::sparse
