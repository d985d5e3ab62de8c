#include "io/bounce_writer.h"

#include <algorithm>
#include <cstring>

#include "base/endian.h"

namespace flashpipe::io {

Result<std::unique_ptr<BounceWriter>> BounceWriter::Create(const Device& device, const BounceOptions& options) {
  const uint32_t block = device.geometry.logical_block;
  if (options.buffer_bytes == 0 || block == 0 || options.buffer_bytes % block != 0) {
    return InvalidArgument(fmt::format("{}: bounce buffer of {} bytes is not a positive multiple of the {}-byte block",
                                       device.name, options.buffer_bytes, block));
  }
  ExtentMap map = ExtentMap::Single(device.window_offset, WindowSize(device));
  if (!device.extents.empty()) {
    if (device.window_offset != 0 || device.window_size != 0) {
      return InvalidArgument(device.name + ": a window is either extents or an offset and size, not both");
    }
    FP_ASSIGN_OR_RETURN(map, ExtentMap::Create(device.name, device.extents, device.geometry.size, block));
  }
  return std::unique_ptr<BounceWriter>(new BounceWriter(device, std::move(map), options));
}

BounceWriter::BounceWriter(const Device& device, ExtentMap map, const BounceOptions& options)
    : device_(device),
      map_(std::move(map)),
      options_(options),
      bounce_(options.buffer_bytes, std::max<uint32_t>(device.geometry.mem_align, 512)),
      fill_(kFillBufferBytes, std::max<uint32_t>(device.geometry.mem_align, 512)) {}

Status BounceWriter::WriteBlocking(uint64_t offset, const uint8_t* buf, uint64_t length) {
  if (!failed_.ok()) return failed_;
  failed_ = Issue(offset, buf, length);
  FP_RETURN_IF_ERROR(failed_);
  stats_.requests++;
  stats_.bytes_written += length;
  return Status::Ok();
}

Status BounceWriter::Issue(uint64_t offset, const uint8_t* buf, uint64_t length) {
  FP_RETURN_IF_ERROR(CheckInWindow(device_, offset, length));
  const uint32_t block = device_.geometry.logical_block;
  if (device_.geometry.direct && (offset % block != 0 || length % block != 0)) {
    return Unsupported(fmt::format("{}: bounce write at image offset 0x{:x}+{} is not aligned to the {}-byte block",
                                   device_.name, offset, length, block));
  }
  return map_.Split(offset, length, [&](uint64_t device_offset, uint64_t in_range, uint64_t n) -> Status {
    IoOp op{.kind = OpKind::kWrite, .offset = device_offset, .length = n,
            .buf = const_cast<uint8_t*>(buf + in_range)};
    FP_RETURN_IF_ERROR(device_.queue->Submit(op));
    FP_ASSIGN_OR_RETURN(IoCompletion c, device_.queue->Wait());
    return c.status;
  });
}

Status BounceWriter::Flush() {
  if (buffered_ == 0) return Status::Ok();
  FP_RETURN_IF_ERROR(WriteBlocking(buffer_offset_, bounce_.data(), buffered_));
  buffer_offset_ += buffered_;
  buffered_ = 0;
  return Status::Ok();
}

Status BounceWriter::OnHeader(const sparse::FileHeader& header) {
  FP_RETURN_IF_ERROR(CheckInWindow(device_, 0, header.image_size()));
  stats_.image_size = std::max(stats_.image_size, header.image_size());
  return Status::Ok();
}

Status BounceWriter::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  if (finished_) return InvalidArgument("bounce writer: event after Finish()");
  if (buffered_ > 0 && offset != buffer_offset_ + buffered_) FP_RETURN_IF_ERROR(Flush());
  if (buffered_ == 0) buffer_offset_ = offset;
  stats_.image_size = std::max(stats_.image_size, offset + data.size());
  while (!data.empty()) {
    const uint64_t n = std::min<uint64_t>(data.size(), options_.buffer_bytes - buffered_);
    std::memcpy(bounce_.data() + buffered_, data.data(), n);
    buffered_ += n;
    data = data.subspan(n);
    if (buffered_ == options_.buffer_bytes) FP_RETURN_IF_ERROR(Flush());
  }
  return Status::Ok();
}

Status BounceWriter::OnChunk(const sparse::ChunkInfo& chunk) {
  return chunk.type == sparse::kChunkRaw ? Flush() : Status::Ok();
}

Status BounceWriter::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  if (finished_) return InvalidArgument("bounce writer: event after Finish()");
  FP_RETURN_IF_ERROR(Flush());
  stats_.image_size = std::max(stats_.image_size, offset + length);
  const uint64_t used = std::min<uint64_t>(length, fill_.size());
  for (uint64_t i = 0; i + 4 <= used; i += 4) StoreLE<uint32_t>(fill_.data() + i, pattern);
  for (uint64_t done = 0; done < length;) {
    const uint64_t n = std::min(used, length - done);
    FP_RETURN_IF_ERROR(WriteBlocking(offset + done, fill_.data(), n));
    done += n;
  }
  return Status::Ok();
}

Status BounceWriter::OnSkip(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(Flush());
  stats_.image_size = std::max(stats_.image_size, offset + length);
  stats_.bytes_skipped += length;
  return Status::Ok();
}

Status BounceWriter::OnEnd() { return Flush(); }

Status BounceWriter::Finish() {
  if (finished_) return InvalidArgument("bounce writer: Finish() called twice");
  finished_ = true;
  FP_RETURN_IF_ERROR(failed_);
  FP_RETURN_IF_ERROR(Flush());
  return options_.sync ? device_.queue->Sync().WithContext(device_.name) : Status::Ok();
}

}  // namespace flashpipe::io
