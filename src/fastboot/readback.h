// Reading partitions back for the host: `fetch` and `upload` send a range's
// bytes, `oem digest` answers its SHA-256.
//
// A range is written PART[:OFFSET[:SIZE]] as fastbootd's fetch takes it:
// OFFSET defaults to 0 and SIZE to the rest of the partition; numbers are
// decimal or 0x-prefixed hex (the AOSP client sends "0x%08x"); a leading 0
// without x is refused rather than read as octal. A range that starts or
// runs past the partition's end is refused, naming the partition's size.
//
// Reads go through io::ImageReader on the partition's window (Storage::
// OpenRead): O_DIRECT at the queue's depth, so what comes back is the
// medium's content now, not a page cache's, and no request can leave the
// partition. The next requests are in flight while the current piece is
// sent or hashed. An offset inside an O_DIRECT block is read from the
// block's start and the bytes before it dropped; holes of a file come out as
// zeros without being read.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/sha256.h"
#include "base/status.h"
#include "fastboot/storage.h"
#include "fastboot/connection.h"

namespace flashpipe::fastboot {

struct RangeArg {
  std::string partition;
  std::optional<uint64_t> offset;
  std::optional<uint64_t> size;
};
// "system", "system:0x1000", "system:0x1000:4096".
Result<RangeArg> ParseRangeArg(std::string_view text);

struct ByteRange {
  uint64_t offset = 0;  // in the partition
  uint64_t size = 0;
};
// A range by partition name, as `oem stage` and fetch leave it for upload.
struct StagedRange {
  std::string partition;
  ByteRange range;
};

// The bytes `arg` names in `p` (size 0 when the offset is the partition's end
// and no size was given); an error when they are not all inside it.
Result<ByteRange> ResolveRange(const Partition& p, const RangeArg& arg);

// The bytes of a range in order, read ahead at depth.
class RangeReader {
 public:
  // Opens the reader (nothing is sent yet: errors here come before any
  // data phase). REQUIRES: no write in flight on the storage.
  static Result<std::unique_ptr<RangeReader>> Open(const Storage& storage, const Partition& p, ByteRange range);
  ~RangeReader();
  // The next bytes (empty at the end), valid until the next call. An error
  // names the partition and the unreadable block.
  Result<std::span<const uint8_t>> Next();
  uint64_t done() const { return done_; }

 private:
  RangeReader();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint64_t done_ = 0;
};

// The data phase of fetch and upload: DATA%08x, then the range's bytes.
// Returns the transport's error (the client is gone: the session ends).
// When the medium fails part way, the rest of the phase is sent as zeros so
// that the client is not left waiting for bytes, and the read error is put
// in *read_error for the final FAIL.
// REQUIRES: 0 < range.size <= transport.max_data().
Status SendRange(Connection& transport, RangeReader& reader, uint64_t size, Status* read_error);

// SHA-256 of the range as it reads back now. `progress(done)` runs after each
// piece; its error stops the digest.
Result<Sha256::Digest> DigestRange(RangeReader& reader, const std::function<Status(uint64_t done)>& progress);

}  // namespace flashpipe::fastboot
