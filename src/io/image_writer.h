// ImageWriter: the pipelined engine. A WriteSink (io/write_sink.h) that turns
// the decoder's events into large aligned requests on one or more devices at
// once.
//
// RAW bytes are copied into a bounded pool of aligned buffers (or read there
// straight from a seekable source with WriteRawFromFd, or, with borrow_raw,
// written from the caller's memory where it is aligned) and coalesced into
// requests of request_size; while up to queue_depth requests are in flight the
// next ones are prepared. Runs of zero blocks inside RAW data are zeroed,
// not written (ZeroMode::kAuto). Non-zero FILL is written from one shared pattern
// buffer; zero FILL becomes BLKZEROOUT / holes (ZeroMode); DONT_CARE is
// skipped or discarded. Unaligned heads and tails are read-modify-written
// through the same O_DIRECT queue. Every op is bounds-checked against the
// device window before it is issued; a window of several extents (a logical
// partition) has each op split at extent boundaries, every piece inside the
// extent it lands in. Finish() drains, writes the first block
// last if asked, runs one fdatasync per device and, with verify, reads
// everything back with O_DIRECT and compares against digests taken while
// writing.
//
// Phases and stopping: Finish() tells `phase` when it moves from writing to
// syncing and to verifying (with the verify's progress), and `cancel` stops
// the writer between requests and between Finish()'s steps with kCancelled
// (what is in flight is drained first); failed_device() says which device's
// failure stopped it, for a report per target.
//
// Events may overlap earlier ones (overlaid parts); the final content is the
// last event's, and verify checks the final content.
// Memory: pool of queue_depth+2 buffers of request_size per writer, whatever
// the image size. Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/buffer_stock.h"
#include "base/cancel.h"
#include "base/status.h"
#include "io/extent_map.h"
#include "io/io_queue.h"
#include "io/target.h"
#include "io/write_sink.h"
#include "sparse/sink.h"

namespace flashpipe::io {

enum class WritePhase : uint8_t { kSync, kVerify };

enum class ZeroMode { kAuto, kWrite };      // auto: zeroout/holes; write: real zeros
Result<ZeroMode> ParseZeroMode(std::string_view name);  // auto|write

// One destination: a queue on a target, its geometry and its window. The
// writer does not own the queue; the queue must outlive the writer (the
// writer's destructor waits for what is still in flight).
struct Device {
  std::string name;
  IoQueue* queue = nullptr;
  Geometry geometry;
  uint64_t window_offset = 0;  // absolute offset of image byte 0
  uint64_t window_size = 0;    // bytes the image may cover; 0 = geometry.size - offset
  // Instead of window_offset/window_size (which must then be 0): the window
  // is these device ranges taken in order (ExtentMap), e.g. the LINEAR
  // extents of a logical partition. Each must be whole device blocks.
  std::vector<DeviceExtent> extents;
  // Every byte of the window reads back as zero until written (a freshly
  // truncated file): zero ranges need not be touched.
  bool reads_zero = false;
  // Regular files only (-1 otherwise): lets the writer write the last partial
  // block whole with O_DIRECT and then trim the file back to geometry.size.
  int file_fd = -1;
};
Device DeviceFor(const Target& target, IoQueue* queue);
// Bytes of image the device's window holds: the extents' total, else
// window_size (0: up to the end of the geometry).
uint64_t WindowSize(const Device& device);
// OK when image bytes [offset, offset+length) lie inside the device's window;
// else kNoSpace naming both.
Status CheckInWindow(const Device& device, uint64_t offset, uint64_t length);

struct WriterOptions {
  uint64_t request_size = 0;  // 0 = from geometry (optimal_io or max_request, >= 1 MiB)
  // Sizes the pool (queue_depth + 2 buffers); 0 = the deepest device queue.
  // Ops in flight are bounded by each queue's own depth().
  unsigned queue_depth = 0;
  // kAuto: zero FILL goes to zeroout/holes, and so do runs of at least 64 KiB
  // of whole zero blocks found inside RAW data (raw images carry them as
  // data). kWrite: zeros are written as data, both ways.
  ZeroMode zero_mode = ZeroMode::kAuto;
  bool discard = false;       // DONT_CARE -> BLKDISCARD on block devices
  bool verify = false;
  bool first_block_last = false;  // hold back the first MiB until all else is done
  // Finish() ends with one fdatasync per device. false: the caller syncs
  // later (fastboot write-behind batches the parts of one flash).
  bool sync = true;
  // The caller promises that the bytes OnRaw gets stay valid and unchanged
  // until Finish() returns (an image held in memory): stretches whose memory
  // and image offsets are aligned are written straight from them, no copy.
  bool borrow_raw = false;
  // Where the writer's buffers come from and go back to (optional): a
  // caller that creates a writer per image keeps them mapped in between.
  BufferStock* stock = nullptr;
  // Called now and then with bytes of image processed so far.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // Finish() calls (kSync, 0, 0) once the writes are done, before the held
  // back first block, file trims and fdatasyncs; (kVerify, 0, total) before
  // reading back `total` bytes over all devices, then (kVerify, done, total)
  // as the read-back goes on.
  std::function<void(WritePhase phase, uint64_t done, uint64_t total)> phase;
  // Once set, events, Finish() and verify stop at the next request with
  // the flag's kCancelled status.
  const CancelFlag* cancel = nullptr;
};

// A request size a user may ask for: a multiple of 4 KiB, 4 KiB to 64 MiB.
Status CheckRequestSize(uint64_t bytes);
// The request size used when none is asked for: the device's optimal I/O
// size, else its largest request, clamped to 1..4 MiB (the reader uses it too).
uint64_t DefaultRequestSize(const Geometry& geometry);

class ImageWriter final : public WriteSink {
 public:
  static Result<std::unique_ptr<ImageWriter>> Create(std::vector<Device> devices,
                                                     const WriterOptions& options);
  ~ImageWriter() override;

  Status OnHeader(const sparse::FileHeader& header) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;
  Status OnEnd() override;

  // Zero-copy RAW: reads n bytes at in_offset of fd straight into aligned
  // buffers and writes them at image offset out_offset. Returns the CRC32 of
  // the bytes (for Decoder::AdvanceRaw).
  Result<uint32_t> WriteRawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n);

  // Drain, first block last, fdatasync each device (unless !sync), verify.
  // Call once.
  Status Finish() override;
  const WriteStats& stats() const override;
  // After a failure: the index (in Create's `devices`) of the device whose
  // request, sync, window or read-back failed first; nullopt when the
  // failure was no one device's (a bad event, a cancel).
  std::optional<size_t> failed_device() const;

 private:
  ImageWriter();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashpipe::io
