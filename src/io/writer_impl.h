// ImageWriter's internals, shared by image_writer.cc (events -> requests),
// writer_device.cc (issuing, ordering, completions, read-modify-write, the
// held-back first block) and writer_verify.cc (read-back). Not a public header.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/aligned_buffer.h"
#include "io/digest_map.h"
#include "io/image_writer.h"

namespace flashpipe::io {

// Where the bytes of an in-flight write live, so the buffer is not reused
// before the device is done with it.
struct BufRef {
  enum Kind : uint8_t { kNone, kPool, kPattern, kScratch } kind = kNone;
  int index = -1;
};

struct InflightOp {
  uint64_t tag = 0;
  uint64_t begin = 0, end = 0;  // image offsets
  OpKind kind = OpKind::kWrite;
  BufRef buf;
};

struct DevState {
  Device dev;
  ExtentMap map;               // image offsets -> device offsets (one extent for a plain window)
  uint64_t limit = 0;          // image bytes this device may be written up to
  bool extendable = false;     // regular file: may write the last block whole, then trim
  bool extended = false;
  uint64_t written_end = 0;    // high-water of written data (for reads_zero devices)
  std::vector<InflightOp> inflight;
  bool broken = false;         // Wait() failed: ops may still be in the kernel
  DigestMap digests;
  std::vector<AlignedBuffer> scratch;  // one block each, for read-modify-write
  std::vector<bool> scratch_busy;
  int scratch_base = 0;        // registered buffer index of scratch[0]
  // first_block_last: the final content of [0, hold_len), written at Finish.
  AlignedBuffer hold;
  bool hold_loaded = false;
  uint64_t hold_touched = 0;   // end of the touched part of the hold
};

struct PatternBuf {
  AlignedBuffer mem;
  uint32_t pattern = 0;
  bool valid = false;
  unsigned refs = 0;
};

struct ImageWriter::Impl {
  WriterOptions options;
  uint64_t align = 4096;       // request grid (image offsets), common to all devices
  uint64_t request_size = 1 << 20;
  uint64_t mem_align = 4096;
  uint64_t hold_len = 0;       // first_block_last: bytes held back
  std::vector<DevState> devs;
  std::vector<AlignedBuffer> pool;
  std::vector<unsigned> pool_refs;
  PatternBuf patterns[2];
  int pattern_base = 0;        // registered index of patterns[0]
  uint64_t next_tag = 1;
  // Tags of the op Issue submitted last: one per piece, first_tag..last_tag.
  uint64_t first_tag = 0, last_tag = 0;
  Status failed;
  int failed_device = -1;      // index in devs of the device `failed` came from
  bool finished = false;
  WriteStats stats;
  uint64_t progress_done = 0, progress_reported = 0;

  // Staging: the request being filled, image range [cur_base, cur_base + request_size).
  int cur = -1;
  uint64_t cur_base = 0, cur_begin = 0, cur_end = 0;

  // --- events (image_writer.cc)
  Status CheckEvent(uint64_t offset, uint64_t length);
  using FillFn = std::function<Status(uint8_t* dst, uint64_t n, uint64_t image_offset)>;
  Status PutData(uint64_t offset, uint64_t length, const FillFn& fill);
  Status FlushStaging();
  Status PutBorrowed(uint64_t offset, std::span<const uint8_t> data);
  // Writes whole blocks [begin, end) of image data at `src` (src[0] is image
  // byte `begin`) on every device; zero runs become ZeroRange (kAuto).
  Status WriteBlocks(uint64_t begin, uint64_t end, uint8_t* src, BufRef ref);
  Status WriteData(uint64_t begin, uint64_t end, uint8_t* src, BufRef ref);
  Status Fill(uint64_t offset, uint64_t length, uint32_t pattern);
  Status Skip(uint64_t offset, uint64_t length);
  Status ZeroRange(uint64_t begin, uint64_t end);
  Status PatternRange(uint64_t begin, uint64_t end, uint32_t pattern);
  void Progress(uint64_t end);
  Status Finish();
  // The first failure sticks, with the device it came from: returns `failed`.
  Status Fail(const DevState& d, Status s);
  void Phase(WritePhase phase, uint64_t done, uint64_t total) const {
    if (options.phase) options.phase(phase, done, total);
  }

  // --- devices (writer_device.cc)
  Status Issue(DevState& d, OpKind kind, uint64_t begin, uint64_t length, uint8_t* buf, BufRef ref);
  Status WaitDevice(DevState& d);
  Status WaitAny();
  void DrainAll();
  // Until every op tagged first..last has completed.
  Status WaitTags(DevState& d, uint64_t first, uint64_t last);
  Result<int> AcquirePool();
  Result<int> AcquirePattern(uint32_t pattern);
  Result<int> AcquireScratch(DevState& d);
  Status ReadBlock(DevState& d, uint64_t begin, uint8_t* dst);
  Status ReadModifyWrite(uint64_t block, uint64_t lo, uint64_t hi, const uint8_t* src);
  Status LoadHold(DevState& d);
  void ApplyToHold(DevState& d, OpKind kind, uint64_t begin, uint64_t length, const uint8_t* buf);
  Status WriteHolds();
  Status TrimFiles();
  uint8_t* BufData(DevState& d, BufRef ref);
  int BufIndex(DevState& d, BufRef ref) const;
  void Release(BufRef ref, DevState& d);

  // Buffers from options.stock when there is one.
  AlignedBuffer NewBuffer(size_t size) const;
  void ReturnBuffers();

  // --- verify (writer_verify.cc)
  // Reads d back; `done` counts the bytes verified over all devices, of `total`.
  Status Verify(DevState& d, uint64_t* done, uint64_t total);
  uint64_t VerifyBytes() const;
};

}  // namespace flashpipe::io
