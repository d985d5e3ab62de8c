#include "fastboot/download_stream.h"

#include <algorithm>

namespace flashpipe::fastboot {

uint64_t DownloadStream::step() const { return std::clamp<uint64_t>(size_ / 8, 64u << 10, 2u << 20); }

void DownloadStream::Publish(const std::vector<std::span<const uint8_t>>& closed, std::span<const uint8_t> open,
                             uint64_t received) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    // The open piece published last time is now closed (same start, maybe
    // longer) or still open: either way its entry is replaced.
    for (size_t k = closed_; k < closed.size(); ++k) {
      if (k < pieces_.size()) {
        pieces_[k] = closed[k];
      } else {
        pieces_.push_back(closed[k]);
      }
    }
    pieces_.resize(closed.size());
    closed_ = closed.size();
    if (!open.empty()) pieces_.push_back(open);
    received_ = received;
    wake = received_ >= wanted_ && received_ > notified_;
    if (wake) notified_ = received_;
  }
  if (wake) cv_.notify_one();
}

void DownloadStream::Abort(Status why) {
  {
    std::lock_guard lock(mu_);
    if (received_ == size_ || !aborted_.ok()) return;  // complete: the writer takes it all
    aborted_ = why.ok() ? Cancelled("download abandoned") : std::move(why);
  }
  cv_.notify_one();
}

Result<std::vector<std::span<const uint8_t>>> DownloadStream::Next(uint64_t step) {
  std::unique_lock lock(mu_);
  wanted_ = std::min(size_, taken_ + std::max<uint64_t>(step, 1));
  cv_.wait(lock, [this] { return !aborted_.ok() || received_ >= wanted_; });
  // After an abort, what did arrive is still handed out, then the error.
  if (received_ == taken_ && !aborted_.ok()) return aborted_;
  std::vector<std::span<const uint8_t>> out;
  for (size_t k = next_piece_; k < pieces_.size(); ++k) {
    std::span<const uint8_t> piece = pieces_[k];
    uint64_t from = k == next_piece_ ? next_offset_ : 0;
    if (from < piece.size()) out.push_back(piece.subspan(from));
  }
  if (!pieces_.empty()) {
    next_piece_ = pieces_.size() - 1;
    next_offset_ = pieces_.back().size();
  }
  taken_ = received_;
  return out;
}

}  // namespace flashpipe::fastboot
