#include "input/byte_reader.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/fd_io.h"

namespace flashpipe::input {

Result<size_t> ByteReader::ReadUpTo(std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    FP_ASSIGN_OR_RETURN(size_t n, Read(out.subspan(done)));
    if (n == 0) break;
    done += n;
  }
  return done;
}

FdReader::FdReader(UniqueFd owned, int borrowed, std::string name)
    : owned_(std::move(owned)), fd_(owned_.valid() ? owned_.get() : borrowed), name_(std::move(name)) {
  struct stat st;
  if (::fstat(fd_, &st) == 0) {
    pollable_ = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode);
    regular_ = S_ISREG(st.st_mode);
    file_size_ = static_cast<uint64_t>(st.st_size);
  }
}

Result<uint64_t> ByteReader::Skip(uint64_t n) {
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
  uint64_t done = 0;
  while (done < n) {
    FP_ASSIGN_OR_RETURN(size_t got, Read(std::span(buf).first(static_cast<size_t>(std::min<uint64_t>(buf.size(), n - done)))));
    if (got == 0) break;
    done += got;
  }
  return done;
}

Result<uint64_t> FdReader::Skip(uint64_t n) {
  if (!regular_) return ByteReader::Skip(n);
  off_t cur = ::lseek(fd_, 0, SEEK_CUR);
  if (cur < 0) return ErrnoError(fmt::format("{}: seek at byte {}", name_, position_));
  uint64_t from = static_cast<uint64_t>(cur);
  uint64_t to = std::max(from, std::min(file_size_, from + n));
  if (::lseek(fd_, static_cast<off_t>(to), SEEK_SET) < 0) {
    return ErrnoError(fmt::format("{}: seek to byte {}", name_, position_ + (to - from)));
  }
  position_ += to - from;
  return to - from;
}

std::unique_ptr<FdReader> FdReader::Own(UniqueFd fd, std::string name) {
  return std::make_unique<FdReader>(std::move(fd), -1, std::move(name));
}

std::unique_ptr<FdReader> FdReader::Borrow(int fd, std::string name) {
  return std::make_unique<FdReader>(UniqueFd(), fd, std::move(name));
}

Status FdReader::WaitReadable() {
  // Short poll timeouts so that Cancel() is noticed while the writer of a fifo
  // is silent.
  while (true) {
    if (cancelled_.load()) return Cancelled(fmt::format("{}: read cancelled at byte {}", name_, position_));
    struct pollfd p = {fd_, POLLIN, 0};
    int r = RetryOnEintr([&] { return ::poll(&p, 1, 200); });
    if (r > 0) return Status::Ok();
    if (r < 0) return ErrnoError(fmt::format("{}: poll at byte {}", name_, position_));
  }
}

Result<size_t> FdReader::Read(std::span<uint8_t> out) {
  while (true) {
    if (pollable_) FP_RETURN_IF_ERROR(WaitReadable());
    if (cancelled_.load()) return Cancelled(fmt::format("{}: read cancelled at byte {}", name_, position_));
    ssize_t n = RetryOnEintr([&] { return ::read(fd_, out.data(), out.size()); });
    if (n >= 0) {
      position_ += static_cast<uint64_t>(n);
      return static_cast<size_t>(n);
    }
    if (errno == EAGAIN) continue;  // a non-blocking descriptor: wait in poll
    return ErrnoError(fmt::format("{}: read at byte {}", name_, position_));
  }
}

Result<std::span<const uint8_t>> PeekReader::Peek(size_t n) {
  if (head_pos_ > 0) {
    head_.erase(head_.begin(), head_.begin() + static_cast<std::ptrdiff_t>(head_pos_));
    head_pos_ = 0;
  }
  while (head_.size() < n) {
    size_t have = head_.size();
    head_.resize(n);
    auto r = inner_->Read(std::span(head_).subspan(have));
    if (!r.ok()) {
      head_.resize(have);
      return r.status();
    }
    head_.resize(have + *r);
    if (*r == 0) break;
  }
  return std::span<const uint8_t>(head_.data(), std::min(n, head_.size()));
}

Result<uint64_t> PeekReader::Skip(uint64_t n) {
  uint64_t from_head = std::min<uint64_t>(n, head_.size() - head_pos_);
  head_pos_ += static_cast<size_t>(from_head);
  uint64_t rest = 0;
  if (from_head < n) {
    FP_ASSIGN_OR_RETURN(rest, inner_->Skip(n - from_head));
  }
  position_ += from_head + rest;
  return from_head + rest;
}

Result<size_t> PeekReader::Read(std::span<uint8_t> out) {
  size_t n = 0;
  if (head_pos_ < head_.size()) {
    n = std::min(out.size(), head_.size() - head_pos_);
    std::memcpy(out.data(), head_.data() + head_pos_, n);
    head_pos_ += n;
  } else {
    FP_ASSIGN_OR_RETURN(n, inner_->Read(out));
  }
  position_ += n;
  return n;
}

}  // namespace flashpipe::input
