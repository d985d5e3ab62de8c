#include "io/discard_writer.h"

#include <algorithm>

namespace flashpipe::io {

Status DiscardWriter::OnHeader(const sparse::FileHeader& header) {
  FP_RETURN_IF_ERROR(CheckInWindow(device_, 0, header.image_size()));
  stats_.image_size = std::max(stats_.image_size, header.image_size());
  return Status::Ok();
}

Status DiscardWriter::Cover(uint64_t offset, uint64_t length) {
  if (finished_) return InvalidArgument("discard writer: event after Finish()");
  FP_RETURN_IF_ERROR(CheckInWindow(device_, offset, length));
  stats_.image_size = std::max(stats_.image_size, offset + length);
  return Status::Ok();
}

Status DiscardWriter::OnSkip(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(Cover(offset, length));
  stats_.bytes_skipped += length;
  return Status::Ok();
}

Status DiscardWriter::Finish() {
  if (finished_) return InvalidArgument("discard writer: Finish() called twice");
  finished_ = true;
  return Status::Ok();
}

}  // namespace flashpipe::io
