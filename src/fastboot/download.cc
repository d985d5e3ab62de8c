#include "fastboot/download.h"

#include <sys/mman.h>

namespace flashpipe::fastboot {

DownloadBuffer::~DownloadBuffer() {
  if (data_ != nullptr) ::munmap(data_, capacity_);
}

Result<std::span<uint8_t>> DownloadBuffer::Get(uint64_t size) {
  if (size > capacity_) {
    return InvalidArgument(fmt::format("download of {} bytes above the buffer of {}", size, capacity_));
  }
  if (data_ == nullptr) {
    void* p = ::mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return ErrnoError(fmt::format("map a download buffer of {} bytes", capacity_));
    // Huge pages where the kernel allows them: a 4 KiB page fault per page
    // of a fresh 256 MiB buffer costs more than a second on some VMs.
    (void)::madvise(p, capacity_, MADV_HUGEPAGE);
    data_ = static_cast<uint8_t*>(p);
  }
  return std::span<uint8_t>(data_, size);
}

void ImageCheck::Begin(uint64_t size) {
  size_ = size;
  fed_ = 0;
  decided_ = false;
  sparse_ = false;
  image_size_ = size;
  decoder_.reset();
  status_ = Status::Ok();
}

void ImageCheck::Arrived(std::span<const uint8_t> image, uint64_t received) {
  if (!decided_) {
    if (received < 4 && received < size_) return;
    decided_ = true;
    sparse_ = sparse::HasSparseMagic(image.first(received));
    if (sparse_) {
      decoder_ = std::make_unique<sparse::Decoder>(
          this, sparse::DecoderOptions{.check_crc = true, .tolerate_missing_tail = true});
    }
  }
  if (!sparse_ || !status_.ok() || received <= fed_) return;
  status_ = decoder_->Feed(image.subspan(fed_, received - fed_));
  fed_ = received;
}

Status ImageCheck::Finish(std::span<const uint8_t> image) {
  Arrived(image, size_);
  if (sparse_ && status_.ok()) status_ = decoder_->Finish();
  return status_;
}

Status ImageCheck::OnHeader(const sparse::FileHeader& header) {
  image_size_ = header.image_size();
  return Status::Ok();
}

}  // namespace flashpipe::fastboot
