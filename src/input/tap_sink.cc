#include "input/tap_sink.h"

#include "base/crc32.h"

namespace flashpipe::input {
namespace {

constexpr uint64_t kPiece = 16 << 20;

}  // namespace

Status TapSink::OnHeader(const sparse::FileHeader& header) {
  FP_RETURN_IF_ERROR(CheckCancel(cancel_));
  return inner_->OnHeader(header);
}

Status TapSink::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  FP_RETURN_IF_ERROR(CheckCancel(cancel_));
  if (digest_ != nullptr) digest_->Data(offset, data);
  return inner_->OnRaw(offset, data);
}

Status TapSink::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  FP_RETURN_IF_ERROR(CheckCancel(cancel_));
  if (digest_ != nullptr) digest_->Fill(offset, length, pattern);
  return inner_->OnFill(offset, length, pattern);
}

Status TapSink::OnSkip(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(CheckCancel(cancel_));
  return inner_->OnSkip(offset, length);  // the digest counts what no event covers as zeros
}

Status TapSink::OnEnd() {
  FP_RETURN_IF_ERROR(CheckCancel(cancel_));
  return inner_->OnEnd();
}

Result<uint32_t> TapSink::RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) {
  uint32_t crc = 0;
  for (uint64_t done = 0; done < n;) {
    FP_RETURN_IF_ERROR(CheckCancel(cancel_));
    uint64_t piece = std::min(kPiece, n - done);
    if (digest_ != nullptr) digest_->FileRange(out_offset + done, fd, in_offset + done, piece);
    FP_ASSIGN_OR_RETURN(uint32_t c, inner_->RawFromFd(out_offset + done, fd, in_offset + done, piece));
    crc = done == 0 ? c : Crc32Combine(crc, c, piece);
    done += piece;
  }
  return crc;
}

}  // namespace flashpipe::input
