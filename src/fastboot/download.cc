#include "fastboot/download.h"

#include <sys/mman.h>

namespace flashpipe::fastboot {

DownloadBuffer::~DownloadBuffer() {
  if (data_ != nullptr) ::munmap(data_, capacity_);
}

Status DownloadBuffer::Map() {
  std::call_once(mapped_, [this] {
    void* p = ::mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      map_status_ = ErrnoError(fmt::format("map a download buffer of {} bytes", capacity_));
      return;
    }
    // Huge pages where the kernel allows them: fewer faults, fewer TLB misses.
    (void)::madvise(p, capacity_, MADV_HUGEPAGE);
    data_ = static_cast<uint8_t*>(p);
  });
  return map_status_;
}

Result<std::span<uint8_t>> DownloadBuffer::Get(uint64_t size) {
  if (size > capacity_) {
    return InvalidArgument(fmt::format("download of {} bytes above the buffer of {}", size, capacity_));
  }
  FP_RETURN_IF_ERROR(Map());
  return std::span<uint8_t>(data_, size);
}

void DownloadBuffer::Prefault() {
#ifdef MADV_POPULATE_WRITE
  if (capacity_ == 0 || !Map().ok()) return;
  (void)::madvise(data_, capacity_, MADV_POPULATE_WRITE);
#endif
}

void ImageCheck::Begin(uint64_t size) {
  size_ = size;
  fed_ = 0;
  decided_ = false;
  sparse_ = false;
  image_size_ = size;
  decoder_.reset();
  has_crc_ = false;
  status_ = Status::Ok();
}

void ImageCheck::Arrived(std::span<const uint8_t> image, uint64_t received) {
  if (!decided_) {
    if (received < 4 && received < size_) return;
    decided_ = true;
    sparse_ = sparse::HasSparseMagic(image.first(received));
    if (sparse_) {
      // No CRC while the bytes arrive: few images carry a CRC32 chunk, and
      // Finish() checks the whole image again when this one did.
      decoder_ = std::make_unique<sparse::Decoder>(
          this, sparse::DecoderOptions{.check_crc = false, .tolerate_missing_tail = true});
    }
  }
  if (!sparse_ || !status_.ok() || received <= fed_) return;
  status_ = decoder_->Feed(image.subspan(fed_, received - fed_));
  fed_ = received;
}

Status ImageCheck::Finish(std::span<const uint8_t> image) {
  Arrived(image, size_);
  if (sparse_ && status_.ok()) status_ = decoder_->Finish();
  if (sparse_ && status_.ok() && has_crc_) {
    sparse::NullSink null;
    sparse::Decoder full(&null, {.check_crc = true, .tolerate_missing_tail = true});
    status_ = full.Feed(image);
    if (status_.ok()) status_ = full.Finish();
  }
  return status_;
}

Status ImageCheck::OnChunk(const sparse::ChunkInfo& chunk) {
  if (chunk.type == sparse::kChunkCrc32) has_crc_ = true;
  return Status::Ok();
}

Status ImageCheck::OnHeader(const sparse::FileHeader& header) {
  image_size_ = header.image_size();
  return Status::Ok();
}

}  // namespace flashpipe::fastboot
