// ExtentSink: puts a partition image where the partition's extents lie in
// the super. Image byte x of the partition goes to the device byte its
// extent maps it to; an event that crosses extents is split at their
// boundaries, and one that reaches past the partition's last extent is an
// error (nothing of it is passed on), so no byte lands outside the
// partition. RawFromFd reads through one fixed 1 MiB buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "input/image_sink.h"
#include "lp/metadata.h"
#include "sparse/sink.h"

namespace flashpipe::superimg {

// One extent: [image_offset, + length) of the partition is at device_offset.
struct Piece {
  uint64_t image_offset = 0;
  uint64_t device_offset = 0;
  uint64_t length = 0;
};

// The pieces of a partition's LINEAR extents, in partition order.
// REQUIRES: every extent of `p` is LINEAR.
std::vector<Piece> PiecesOf(const lp::Metadata& m, const lp::PartitionEntry& p);

class ExtentSink : public input::ImageSink {
 public:
  // `what` names the image and partition in errors ("system.img for
  // partition system"). `out` receives device offsets; not owned.
  ExtentSink(std::string what, std::vector<Piece> pieces, sparse::Sink* out);
  ~ExtentSink() override;

  Status OnHeader(const sparse::FileHeader& h) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;
  Result<uint32_t> RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) override;

  uint64_t capacity() const { return capacity_; }

 private:
  // Calls f(device_offset, offset_in_event, length) for each piece of
  // [offset, offset + length), after checking all of it fits.
  template <typename F>
  Status Map(uint64_t offset, uint64_t length, F f);

  std::string what_;
  std::vector<Piece> pieces_;
  uint64_t capacity_ = 0;
  sparse::Sink* out_;
  // Asks the kernel to read [pos, pos + 16 MiB) of fd ahead, within end.
  void ReadAhead(int fd, uint64_t pos, uint64_t end);

  std::unique_ptr<uint8_t[]> buf_;
  int ahead_fd_ = -1;
  uint64_t ahead_from_ = 0, ahead_to_ = 0;
};

}  // namespace flashpipe::superimg
