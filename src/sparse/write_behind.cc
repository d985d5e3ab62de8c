#include "sparse/write_behind.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/endian.h"
#include "base/fd_io.h"

namespace flashpipe::sparse {
namespace {

constexpr uint64_t kAlign = 4096;
// Smaller aligned stretches go through the page cache: a synchronous
// O_DIRECT write of a few KiB costs a device round trip, a cached one does not.
constexpr uint64_t kMinDirect = uint64_t{64} << 10;
constexpr size_t kMaxSegments = 256;
constexpr size_t kZeroBuffer = size_t{1} << 20;

uint64_t RoundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// `n` bytes of the repeated little-endian `pattern`, dst[0] being byte
// `phase` of it (mod 4): one word, then doubling copies.
void FillPattern(uint8_t* dst, size_t n, uint32_t pattern, uint64_t phase) {
  uint8_t p[4];
  StoreLE<uint32_t>(p, pattern);
  size_t filled = std::min<size_t>(n, 4);
  for (size_t i = 0; i < filled; ++i) dst[i] = p[(phase + i) % 4];
  for (; filled < n; filled *= 2) std::memcpy(dst + filled, dst, std::min(filled, n - filled));
}

}  // namespace

WriteBehind::WriteBehind(int fd, std::string name, Mode mode, WriteBehindOptions options)
    : fd_(fd), name_(std::move(name)), mode_(mode), options_(options), writeback_(fd) {
  struct stat st;
  if (mode_ == Mode::kSeekable && options_.direct && ::fstat(fd_, &st) == 0 &&
      (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
    std::string self = fmt::format("/proc/self/fd/{}", fd_);
    direct_fd_ = UniqueFd(::open(self.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));
  }
  buffers_.resize(static_cast<size_t>(std::max(options_.buffers, 2)));
  for (Buffer& b : buffers_) {
    b.mem = PipeBuffer(RoundUp(std::max<size_t>(options_.buffer_size, kAlign), kAlign));
    b.segments.reserve(kMaxSegments);
  }
  thread_ = std::thread([this] { Run(); });
}

WriteBehind::~WriteBehind() {
  if (thread_.joinable()) (void)Finish();  // what was queued is written, as a synchronous writer would have
}

uint64_t WriteBehind::direct_bytes() const {
  std::lock_guard lock(mu_);
  return direct_bytes_;
}

uint64_t WriteBehind::buffered_bytes() const {
  std::lock_guard lock(mu_);
  return buffered_bytes_;
}

// The buffer being filled, waiting for a free one if need be.
Status WriteBehind::Current() {
  if (current_ != nullptr) return Status::Ok();
  std::unique_lock lock(mu_);
  for (;;) {
    if (!error_.ok()) return error_;
    auto it = std::find_if(buffers_.begin(), buffers_.end(), [](const Buffer& b) { return b.free; });
    if (it != buffers_.end()) {
      it->free = false;
      it->segments.clear();
      it->used = 0;
      current_ = &*it;
      return Status::Ok();
    }
    to_producer_.wait(lock);
  }
}

void WriteBehind::Submit() {
  if (current_ == nullptr) return;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::exchange(current_, nullptr));
  }
  to_writer_.notify_one();
}

// Places `length` bytes for `offset`; copy(dst, n, done) writes the n bytes
// that follow the first `done` ones.
template <typename Copy>
Status WriteBehind::Put(uint64_t offset, uint64_t length, Copy copy) {
  if (mode_ == Mode::kStream && offset != end_) {
    return Internal(fmt::format("{}: out-of-order write at 0x{:x} to a stream at 0x{:x}", name_, offset, end_));
  }
  if (length == 0) return Status::Ok();
  uint64_t done = 0;
  while (done < length) {
    FP_RETURN_IF_ERROR(Current());
    Buffer& b = *current_;
    uint64_t at = offset + done;
    Segment* last = b.segments.empty() ? nullptr : &b.segments.back();
    if (last != nullptr && !last->zero && at >= last->offset && at <= last->offset + last->length) {
      // Continues the last segment, or rewrites part of it in place.
      size_t pos = last->at + static_cast<size_t>(at - last->offset);
      size_t n = static_cast<size_t>(std::min<uint64_t>(length - done, b.mem.size() - pos));
      if (n > 0) {
        copy(b.mem.data() + pos, n, done);
        last->length = std::max(last->length, at - last->offset + n);
        b.used = std::max(b.used, pos + n);
        done += n;
        continue;
      }
    }
    // A new segment, at the same offset modulo 4096 in memory as in the file.
    size_t pos = b.used + static_cast<size_t>((at % kAlign + kAlign - b.used % kAlign) % kAlign);
    if (pos >= b.mem.size() || b.segments.size() == kMaxSegments) {
      Submit();
      continue;
    }
    b.segments.push_back({at, pos, 0, false});
    b.used = pos;
  }
  end_ = std::max(end_, offset + length);
  return Status::Ok();
}

Status WriteBehind::Write(uint64_t offset, std::span<const uint8_t> data) {
  return Put(offset, data.size(),
             [&](uint8_t* dst, size_t n, uint64_t done) { std::memcpy(dst, data.data() + done, n); });
}

Status WriteBehind::Fill(uint64_t offset, uint64_t length, uint32_t pattern) {
  return Put(offset, length, [&](uint8_t* dst, size_t n, uint64_t done) { FillPattern(dst, n, pattern, done); });
}

Status WriteBehind::Zero(uint64_t offset, uint64_t length) {
  if (mode_ == Mode::kStream) return Internal(fmt::format("{}: cannot punch a hole in a stream", name_));
  if (length == 0) return Status::Ok();
  FP_RETURN_IF_ERROR(Current());
  if (current_->segments.size() == kMaxSegments) {
    Submit();
    FP_RETURN_IF_ERROR(Current());
  }
  current_->segments.push_back({offset, 0, length, true});
  end_ = std::max(end_, offset + length);
  return Status::Ok();
}

Status WriteBehind::Finish() {
  Submit();
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  to_writer_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  return error_;
}

void WriteBehind::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    to_writer_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing_ with nothing left: done
    Buffer* b = queue_.front();
    queue_.pop_front();
    bool failed = !error_.ok();
    lock.unlock();
    Status s = failed ? Status::Ok() : WriteBuffer(*b);  // after an error, buffers are only recycled
    lock.lock();
    if (!s.ok() && error_.ok()) error_ = s;
    b->free = true;
    to_producer_.notify_all();
  }
}

Status WriteBehind::WriteBuffer(const Buffer& b) {
  for (const Segment& s : b.segments) {
    if (s.zero) {
      FP_RETURN_IF_ERROR(Punch(s.offset, s.length));
    } else {
      FP_RETURN_IF_ERROR(WriteSegment(b.mem.data() + s.at, s.length, s.offset));
    }
  }
  return Status::Ok();
}

Status WriteBehind::WriteSegment(const uint8_t* data, uint64_t length, uint64_t offset) {
  if (mode_ == Mode::kStream) {
    FP_RETURN_IF_ERROR(WriteAll(fd_, {data, static_cast<size_t>(length)}, name_, offset));
    std::lock_guard lock(mu_);
    buffered_bytes_ += length;
    return Status::Ok();
  }
  uint64_t head = std::min<uint64_t>(length, (kAlign - offset % kAlign) % kAlign);
  uint64_t middle = (length - head) / kAlign * kAlign;
  if (!direct_fd_.valid() || !direct_ok_ || middle < kMinDirect) {
    return WriteBuffered(data, static_cast<size_t>(length), offset);
  }
  FP_RETURN_IF_ERROR(WriteBuffered(data, static_cast<size_t>(head), offset));
  FP_RETURN_IF_ERROR(WriteDirect(data + head, static_cast<size_t>(middle), offset + head));
  uint64_t tail = head + middle;
  return WriteBuffered(data + tail, static_cast<size_t>(length - tail), offset + tail);
}

Status WriteBehind::WriteDirect(const uint8_t* data, size_t length, uint64_t offset) {
  ssize_t n = RetryOnEintr([&] { return ::pwrite(direct_fd_.get(), data, length, static_cast<off_t>(offset)); });
  if (n < 0 && errno == EINVAL) {
    direct_ok_ = false;  // this file or device refuses O_DIRECT writes: the page cache from now on
    return WriteBuffered(data, length, offset);
  }
  if (n < 0) return ErrnoError(fmt::format("write {} at byte 0x{:x}", name_, offset));
  size_t done = static_cast<size_t>(n);
  FP_RETURN_IF_ERROR(PwriteAll(direct_fd_.get(), {data + done, length - done}, offset + done, name_));
  std::lock_guard lock(mu_);
  direct_bytes_ += length;
  return Status::Ok();
}

Status WriteBehind::WriteBuffered(const uint8_t* data, size_t length, uint64_t offset) {
  if (length == 0) return Status::Ok();
  FP_RETURN_IF_ERROR(PwriteAll(fd_, {data, length}, offset, name_));
  writeback_.Wrote(offset + length);
  std::lock_guard lock(mu_);
  buffered_bytes_ += length;
  return Status::Ok();
}

Status WriteBehind::Punch(uint64_t offset, uint64_t length) {
  if (punch_ok_) {
    if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(length)) == 0) {
      return Status::Ok();
    }
    if (errno != EOPNOTSUPP && errno != ENOSYS) {
      return ErrnoError(fmt::format("punch hole in {} at byte 0x{:x}", name_, offset));
    }
    punch_ok_ = false;
  }
  if (zeros_.empty()) zeros_.resize(kZeroBuffer);
  while (length > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(length, zeros_.size()));
    FP_RETURN_IF_ERROR(WriteBuffered(zeros_.data(), n, offset));
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

WriteBehindOutput::WriteBehindOutput(int fd, std::string name, WriteBehindOptions options)
    : fd_(fd), name_(std::move(name)) {
  if (auto p = ProbePatchable(fd)) {
    seekable_ = true;
    base_ = p->base;
  }
  writer_ = std::make_unique<WriteBehind>(fd, name_, seekable_ ? WriteBehind::Mode::kSeekable : WriteBehind::Mode::kStream,
                                          options);
}

Status WriteBehindOutput::Write(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  FP_RETURN_IF_ERROR(writer_->Write(base_ + pos_, a));
  pos_ += a.size();
  FP_RETURN_IF_ERROR(writer_->Write(base_ + pos_, b));
  pos_ += b.size();
  return Status::Ok();
}

Status WriteBehindOutput::WriteAt(uint64_t offset, std::span<const uint8_t> data) {
  if (!seekable_) return Output::WriteAt(offset, data);
  if (offset + data.size() > pos_) return Internal(fmt::format("{}: patch past the end at 0x{:x}", name_, offset));
  return writer_->Write(base_ + offset, data);
}

Status WriteBehindOutput::Finish() {
  FP_RETURN_IF_ERROR(writer_->Finish());
  if (seekable_ && ::lseek(fd_, static_cast<off_t>(base_ + pos_), SEEK_SET) < 0) {
    return ErrnoError(fmt::format("seek {}", name_));
  }
  return Status::Ok();
}

}  // namespace flashpipe::sparse
