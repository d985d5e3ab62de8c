#include "fastboot/bounce_sink.h"

#include <algorithm>
#include <cstring>

#include "base/endian.h"

namespace flashpipe::fastboot {

Result<std::unique_ptr<BounceSink>> BounceSink::Create(const io::Device& device, uint32_t blocks) {
  if (blocks == 0) return InvalidArgument("bounce buffer of 0 blocks");
  return std::unique_ptr<BounceSink>(new BounceSink(device, blocks));
}

BounceSink::BounceSink(const io::Device& device, uint32_t blocks)
    : device_(device), buffer_(size_t{blocks} * 512, std::max<uint32_t>(device.geometry.mem_align, 512)) {}

Status BounceSink::WriteBuffer(uint64_t offset, uint64_t length) {
  uint64_t window = device_.window_size;
  if (offset > window || length > window - offset) {
    return NoSpace(fmt::format("{}: write {}+{} outside the partition ({} bytes)", device_.name, offset,
                               length, window));
  }
  // O_DIRECT needs logical-block alignment only; 100 blocks of 512 bytes is
  // not a multiple of 4096, which is the point of the model.
  uint32_t align = device_.geometry.logical_block;
  if (device_.geometry.direct && (offset % align != 0 || length % align != 0)) {
    return Unsupported(fmt::format("{}: bounce write {}+{} not aligned to {}", device_.name, offset, length, align));
  }
  io::IoOp op{.kind = io::OpKind::kWrite, .offset = device_.window_offset + offset, .length = length,
              .buf = buffer_.data()};
  FP_RETURN_IF_ERROR(device_.queue->Submit(op));
  FP_ASSIGN_OR_RETURN(io::IoCompletion c, device_.queue->Wait());
  return c.status;
}

Status BounceSink::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  while (!data.empty()) {
    size_t n = std::min(data.size(), buffer_.size());
    std::memcpy(buffer_.data(), data.data(), n);
    FP_RETURN_IF_ERROR(WriteBuffer(offset, n));
    offset += n;
    data = data.subspan(n);
  }
  return Status::Ok();
}

Status BounceSink::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  for (size_t i = 0; i + 4 <= buffer_.size(); i += 4) StoreLE<uint32_t>(buffer_.data() + i, pattern);
  while (length > 0) {
    uint64_t n = std::min<uint64_t>(length, buffer_.size());
    FP_RETURN_IF_ERROR(WriteBuffer(offset, n));
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

Status BounceSink::OnSkip(uint64_t, uint64_t) { return Status::Ok(); }

Status BounceSink::Finish(bool sync) { return sync ? device_.queue->Sync() : Status::Ok(); }

}  // namespace flashpipe::fastboot
