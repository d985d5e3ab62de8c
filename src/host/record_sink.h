// RecordSink: an image source's events made into records and payload
// (record.h), for one planning or sending pass over the image.
//
// Raw content (raw files, raw streams, bmap input) is classified in blocks
// of 4096 bytes (sparse::BlockClassifier): data blocks become RAW, uniform
// blocks (zeros included) FILL, skipped ranges (bmap-unmapped) nothing, so
// DONT_CARE; the last partial block is padded with zeros. A sparse image's
// chunks are taken as they are (RAW stays RAW, FILL stays FILL, DONT_CARE
// stays a gap, CRC32 is dropped), in the image's block size. Adjacent runs
// of one kind merge; RAW records are cut at kMaxRawRecordBytes.
//
// Without payload (a planning pass) the RAW bytes of a seekable sparse file
// are not read at all, and those of a raw file are read only to be
// classified: the records come out the same as in a sending pass, which
// delivers the payload bytes, each RAW record's before the record.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "base/status.h"
#include "host/record.h"
#include "input/image_sink.h"
#include "sparse/block_classifier.h"

namespace flashpipe::host {

// Where a RecordSink puts what it makes, in image order.
class RecordOut {
 public:
  virtual ~RecordOut() = default;
  // Once, before anything else.
  virtual Status OnShape(const ImageShape& shape) = 0;
  virtual Status OnPayload(std::span<const uint8_t> bytes) = 0;
  virtual Status OnRecord(const Record& record) = 0;
  // Optional: room for up to `max` payload bytes that a file's bytes may be
  // read into directly (saving a copy); empty when not offered. The next
  // call is CommitPayload with how many of them were filled.
  virtual std::span<uint8_t> PayloadSpace(size_t /*max*/) { return {}; }
  virtual Status CommitPayload(size_t /*n*/) { return Internal("CommitPayload without PayloadSpace"); }
  // Optional: `n` payload bytes from payload offset `payload` on are the
  // image file's bytes at `file` (a seekable sparse file's RAW chunks), and
  // the image has a CRC32 chunk (whose check needs its bytes read).
  virtual void OnPayloadInFile(uint64_t /*payload*/, uint64_t /*file*/, uint64_t /*n*/) {}
  virtual Status OnCrcChunk() { return Status::Ok(); }
};

struct RecordSinkOptions {
  bool sparse_input = false;
  bool with_payload = true;
  // A sparse file's RAW read by RawFromFd is CRC'd for the decoder's CRC32
  // check; off when no CRC32 chunk is checked (the plan saw none).
  bool crc = true;
  bool bmap = false;
  // A raw image's size when the source knows it before its end.
  std::optional<uint64_t> raw_size;
};

class RecordSink : public input::ImageSink {
 public:
  RecordSink(RecordOut* out, RecordSinkOptions options);
  ~RecordSink() override;

  Status OnHeader(const sparse::FileHeader& header) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;
  Result<uint32_t> RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) override;
  Status OnChunk(const sparse::ChunkInfo& chunk) override;
  // After the source ran: `image_size` is what it delivered.
  Status Finish(uint64_t image_size);

  uint64_t payload_bytes() const;

 private:
  class Runs;
  Status Start();  // the shape, before the first event

  RecordOut* out_;
  RecordSinkOptions options_;
  bool started_ = false;
  uint32_t blk_ = 4096;
  std::unique_ptr<Runs> runs_;
  std::unique_ptr<sparse::BlockClassifier> classifier_;  // raw content only
};

}  // namespace flashpipe::host
