#include "fastboot/download.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

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

Result<std::span<uint8_t>> DownloadBuffer::Get() {
  FP_RETURN_IF_ERROR(Map());
  return std::span<uint8_t>(data_, capacity_);
}

void DownloadBuffer::Prefault() {
  if (capacity_ == 0 || !Map().ok()) return;
  (void)Prefaulter::Populate(data_, capacity_);
}

void ImageCheck::Begin(uint64_t size) {
  size_ = size;
  received_ = 0;
  head_len_ = 0;
  decided_ = false;
  sparse_ = false;
  image_size_ = size;
  decoder_.reset();
  has_crc_ = false;
  raw_chunk_ = -1;
  starts_.clear();
  status_ = Status::Ok();
}

void ImageCheck::Arrived(std::span<const uint8_t> slice) {
  starts_.clear();
  received_ += slice.size();
  if (!decided_) {
    size_t take = std::min(slice.size(), sizeof head_ - head_len_);
    std::memcpy(head_ + head_len_, slice.data(), take);
    head_len_ += take;
    if (head_len_ < sizeof head_ && received_ < size_) return;
    decided_ = true;
    sparse_ = sparse::HasSparseMagic(std::span<const uint8_t>(head_, head_len_));
    if (!sparse_) return;
    // No CRC while the bytes arrive: few images carry a CRC32 chunk, and
    // Finish() checks the whole image again when this one did.
    decoder_ = std::make_unique<sparse::Decoder>(
        this, sparse::DecoderOptions{.check_crc = false, .tolerate_missing_tail = true});
    // The magic's bytes from earlier slices (a copy: no payload is there).
    if (size_t earlier = head_len_ - take; earlier > 0) {
      status_ = decoder_->Feed(std::span<const uint8_t>(head_, earlier));
    }
  }
  if (!sparse_ || !status_.ok() || slice.empty()) return;
  status_ = decoder_->Feed(slice);
}

Status ImageCheck::Finish(std::span<const std::span<const uint8_t>> pieces) {
  if (!decided_) {  // fewer than 4 bytes in all
    std::vector<uint8_t> none;
    Arrived(none);
  }
  if (sparse_ && status_.ok()) status_ = decoder_->Finish();
  if (sparse_ && status_.ok() && has_crc_) {
    sparse::NullSink null;
    sparse::Decoder full(&null, {.check_crc = true, .tolerate_missing_tail = true});
    for (auto piece : pieces) {
      if (status_ = full.Feed(piece); !status_.ok()) return status_;
    }
    status_ = full.Finish();
  }
  return status_;
}

uint64_t ImageCheck::raw_pending() const { return decoder_ ? decoder_->raw_pending() : 0; }

bool ImageCheck::at_large_raw_start() const {
  return decoder_ && status_.ok() && decoder_->raw_pending() >= kAlignMin &&
         static_cast<int64_t>(decoder_->chunks_done()) != raw_chunk_;
}

uint32_t ImageCheck::chunk_header_size() const {
  return decoder_ && decoder_->header_parsed() ? decoder_->header().chunk_hdr_sz : sparse::kChunkHeaderSize;
}

Status ImageCheck::OnRaw(uint64_t, std::span<const uint8_t> data) {
  // The first piece of a chunk's payload: raw_pending() still counts it.
  if (static_cast<int64_t>(decoder_->chunks_done()) != raw_chunk_) {
    raw_chunk_ = decoder_->chunks_done();
    if (decoder_->raw_pending() >= kAlignMin) starts_.push_back(data.data());
  }
  return Status::Ok();
}

Status ImageCheck::OnChunk(const sparse::ChunkInfo& chunk) {
  if (chunk.type == sparse::kChunkCrc32) has_crc_ = true;
  return Status::Ok();
}

Status ImageCheck::OnHeader(const sparse::FileHeader& header) {
  image_size_ = header.image_size();
  return Status::Ok();
}

// --- Landing -----------------------------------------------------------------

namespace {
constexpr uint64_t kPage = 4096;
uint64_t PageUp(uint64_t v) { return (v + kPage - 1) / kPage * kPage; }
}  // namespace

uint64_t Landing::CapacityFor(uint64_t max_size) {
  return max_size + (max_size / ImageCheck::kAlignMin + 2) * kPage;
}

void Landing::Begin(std::span<uint8_t> buffer, uint64_t size, bool prefault,
                    std::shared_ptr<DownloadStream> stream) {
  prefaulter_.reset();
  stream_ = std::move(stream);
  // Gaps may carry the last bytes a few pages past `size`: the receiver
  // faults those itself.
  if (prefault && size > 0 && Prefaulter::Supported()) {
    prefaulter_ = std::make_unique<Prefaulter>(buffer.first(std::min<uint64_t>(size, buffer.size())));
  }
  buffer_ = buffer;
  size_ = size;
  received_ = pos_ = piece_start_ = settled_ = 0;
  gaps_ = 0;
  pieces_.clear();
  check_.Begin(size);
}

bool Landing::Room(uint64_t end, uint64_t gap) const {
  return end + gap + (size_ - received_) <= buffer_.size();
}

void Landing::ClosePiece(uint64_t at) {
  if (at > piece_start_) pieces_.push_back(buffer_.subspan(piece_start_, at - piece_start_));
  piece_start_ = at;
}

std::span<uint8_t> Landing::Window() {
  uint64_t remaining = size_ - received_;
  if (remaining == 0) return {};
  const ImageCheck& c = check_;
  // A large RAW payload comes next: leave a gap so it starts on a page.
  if (c.at_large_raw_start() && pos_ % kPage != 0 && Room(pos_, PageUp(pos_) - pos_)) {
    ClosePiece(pos_);
    pos_ = piece_start_ = PageUp(pos_);
    ++gaps_;
  }
  uint64_t w = remaining;
  bool packed = true;  // no gap can come inside the window
  if (!c.decided() || (c.sparse() && c.status().ok())) {
    uint64_t pending = c.raw_pending();
    // Through the payload and the next chunk header, or a little at a time
    // among headers and fills.
    w = std::min(w, pending > 0 ? pending + c.chunk_header_size() : ImageCheck::kAlignMin);
    packed = c.decided() && pending > 0;
  }
  w = std::min<uint64_t>(w, buffer_.size() - pos_);
  settled_ = packed ? w : 0;
  return buffer_.subspan(pos_, w);
}

void Landing::Arrived(size_t n) {
  uint64_t end = pos_ + n;
  check_.Arrived(buffer_.subspan(pos_, n));
  received_ += n;
  // Payloads that began inside this slice: move what follows to a page.
  uint64_t shift = 0;
  for (const uint8_t* p : check_.raw_starts()) {
    uint64_t at = static_cast<uint64_t>(p - buffer_.data()) + shift;
    uint64_t gap = PageUp(at) - at;
    if (gap == 0 || !Room(end, gap)) continue;
    std::memmove(buffer_.data() + at + gap, buffer_.data() + at, end - at);
    ClosePiece(at);
    piece_start_ = at + gap;
    end += gap;
    shift += gap;
    ++gaps_;
  }
  pos_ = end;
  // With the last byte in, the Prefaulter stops (it is freed at the next Begin()).
  if (prefaulter_ != nullptr) prefaulter_->Advance(received_ == size_ ? buffer_.size() : pos_);
  if (stream_ != nullptr) stream_->Publish(pieces_, buffer_.subspan(piece_start_, pos_ - piece_start_), received_);
}

void Landing::Abort(Status why) {
  prefaulter_.reset();
  if (stream_ != nullptr) stream_->Abort(std::move(why));
}

Status Landing::Finish() {
  ClosePiece(pos_);
  return check_.Finish(pieces_);
}

}  // namespace flashpipe::fastboot
