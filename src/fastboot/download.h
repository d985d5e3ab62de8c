// The download side of a flash: where the image lands and how it is checked
// while it arrives.
//
// DownloadBuffer is one anonymous mapping of `capacity` bytes, reused for
// every download; its pages come in as the first downloads need them. A
// download's Landing has a Prefaulter (base/prefaulter.h) make them present
// on its own thread a little ahead of the bytes, so that the receiver does
// not pay the page faults of a fresh buffer (the first 256 MiB download
// into one took 0.5 s longer here) and the buffer holds no more than the
// largest download. Prefault() (serve --prefault, on a background thread at
// start) makes every page present at once instead.
//
// ImageCheck decodes a download while it arrives: each slice the transport
// delivers is fed into a sparse::Decoder (tolerate_missing_tail, for the
// 29.0.6 client's split parts of odd-sized raw images) whose sink records only
// the extent the image touches and where RAW payloads start. When the last
// byte is in, Finish() says whether the image is valid and how large it
// expands (CRC32 chunks are checked then, in a second pass, only for images
// that have them), so `flash` can FAIL with the decoder's reason, or because
// the image is bigger than the partition, before anything is written. Images
// without the sparse magic are raw. Memory: fixed, whatever the image.
//
// Landing (below) decides where in the buffer each slice lands.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "base/prefaulter.h"
#include "base/status.h"
#include "fastboot/connection.h"
#include "fastboot/download_stream.h"
#include "sparse/decoder.h"
#include "sparse/sink.h"

namespace flashpipe::fastboot {

class DownloadBuffer {
 public:
  explicit DownloadBuffer(uint64_t capacity) : capacity_(capacity) {}
  ~DownloadBuffer();
  DownloadBuffer(const DownloadBuffer&) = delete;
  DownloadBuffer& operator=(const DownloadBuffer&) = delete;

  // The whole buffer; maps it on first use.
  Result<std::span<uint8_t>> Get();
  uint64_t capacity() const { return capacity_; }
  // Faults every page in (MADV_POPULATE_WRITE), without changing any byte;
  // safe while a download fills the buffer. Best effort.
  void Prefault();

 private:
  Status Map();

  uint64_t capacity_;
  std::once_flag mapped_;
  Status map_status_;
  uint8_t* data_ = nullptr;
};

class ImageCheck : public sparse::NullSink {
 public:
  // RAW payloads this long or longer are worth landing on a 4 KiB boundary.
  static constexpr uint64_t kAlignMin = 64 * 1024;

  // Starts checking a download of `size` bytes.
  void Begin(uint64_t size);
  // The next bytes of the image, in order, in any slicing.
  void Arrived(std::span<const uint8_t> slice);
  // After the last byte, with the whole image as its pieces in order: OK
  // when the image is complete and valid (CRC32 chunks checked here).
  Status Finish(std::span<const std::span<const uint8_t>> pieces);

  bool decided() const { return decided_; }
  bool sparse() const { return sparse_; }
  // Bytes the expanded image covers (sparse: total_blks * blk_sz; raw: size).
  uint64_t image_size() const { return image_size_; }
  const Status& status() const { return status_; }

  // Where the decoder stands, for placing the next bytes (sparse only):
  // payload bytes of the current RAW chunk still to come; whether the next
  // byte is the first of a RAW payload of at least kAlignMin; the chunk
  // header size; and the first bytes of such payloads that began in the
  // last Arrived() slice (pointers into it).
  uint64_t raw_pending() const;
  bool at_large_raw_start() const;
  uint32_t chunk_header_size() const;
  const std::vector<const uint8_t*>& raw_starts() const { return starts_; }

  // sparse::Sink, for the decoder only.
  Status OnHeader(const sparse::FileHeader& header) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnChunk(const sparse::ChunkInfo& chunk) override;

 private:
  uint64_t size_ = 0;
  uint64_t received_ = 0;
  uint8_t head_[4] = {};
  size_t head_len_ = 0;
  bool decided_ = false;
  bool sparse_ = false;
  uint64_t image_size_ = 0;
  bool has_crc_ = false;  // a CRC32 chunk was seen: Finish() checks CRCs
  int64_t raw_chunk_ = -1;  // index of the chunk whose payload began last
  std::vector<const uint8_t*> starts_;
  std::unique_ptr<sparse::Decoder> decoder_;
  Status status_;
};

// Landing: where the bytes of one download go in its buffer. RAW payloads of
// a sparse image of at least kAlignMin bytes start on a 4 KiB boundary, with
// a gap left before them, so the writer sends them to the device straight
// from the buffer instead of copying them; all else is packed. Window()
// mostly ends right after the next chunk header, so the gap is known before
// a payload arrives; when a receive ran past a payload's start anyway, the
// bytes after it are moved (at most kAlignMin of them). The image is then
// pieces(): contiguous runs of its bytes, in order. Gaps take at most 4 KiB
// per kAlignMin of image: CapacityFor() sizes the buffer. settled() says how
// much of a window no gap can split (a raw image's whole rest; a RAW
// payload and the chunk header after it), so a transport may have several
// receives in flight there (USB). With prefault, Begin() starts a
// Prefaulter over the buffer's first `size` bytes, told after each
// Arrived() how far the buffer is filled; it stops when the last byte is in
// (or at the next Begin(), Abort(), or destruction). With a DownloadStream
// (download_stream.h), every Arrived() publishes the settled pieces to it,
// for a writer that takes them while the rest arrives; Abort() aborts it.
class Landing : public DownloadTarget {
 public:
  static uint64_t CapacityFor(uint64_t max_size);

  // `buffer` holds at least CapacityFor(size) bytes. REQUIRES: no receive
  // into the previous download's buffer is in flight.
  void Begin(std::span<uint8_t> buffer, uint64_t size, bool prefault = false,
             std::shared_ptr<DownloadStream> stream = nullptr);
  // The download will not go on: stops its Prefaulter, aborts its stream.
  void Abort(Status why = Status::Ok());
  // Where the next bytes go; empty once all `size` bytes are in.
  std::span<uint8_t> Window() override;
  uint64_t settled() const override { return settled_; }
  // `n` bytes were put at the start of the last Window() (n may exceed it).
  void Arrived(size_t n) override;
  uint64_t received() const override { return received_; }
  uint64_t remaining() const override { return size_ - received_; }
  // After the last byte: the check's verdict; pieces() is then the image.
  Status Finish();

  const ImageCheck& check() const { return check_; }
  const std::vector<std::span<const uint8_t>>& pieces() const { return pieces_; }
  unsigned gaps() const { return gaps_; }
  // The Prefaulter of this download, if it has one (for logs).
  const Prefaulter* prefaulter() const { return prefaulter_.get(); }

 private:
  void ClosePiece(uint64_t at);
  bool Room(uint64_t end, uint64_t gap) const;

  std::span<uint8_t> buffer_;
  uint64_t size_ = 0;
  uint64_t received_ = 0;
  uint64_t pos_ = 0;          // buffer offset of the next byte
  uint64_t piece_start_ = 0;  // buffer offset where the open piece starts
  uint64_t settled_ = 0;      // of the last Window()
  unsigned gaps_ = 0;
  std::vector<std::span<const uint8_t>> pieces_;
  ImageCheck check_;
  std::unique_ptr<Prefaulter> prefaulter_;  // while the download arrives
  std::shared_ptr<DownloadStream> stream_;   // stream-flash: the writer's view
};

}  // namespace flashpipe::fastboot
