// BlockIo: the storage the lp reader and writer work on, as byte offsets
// into one block range (a super partition, a super image file, a sparse file
// read at random). Every call moves all its bytes or fails; an access outside
// [0, size()) is an error, never clamped. Messages name the range and offset.
//
// FdBlockIo is a window [base, base + size) of a file or block device opened
// by the caller (pread/pwrite/fdatasync through base/fd_io.h), which is how
// the daemon will hand the `super` partition of a disk to this library.
// Tests use testing/memory_block_io.h (an in-memory device that can tear the
// N-th write and lose unsynced writes).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace flashpipe::lp {

class BlockIo {
 public:
  virtual ~BlockIo() = default;
  virtual std::string_view name() const = 0;
  virtual uint64_t size() const = 0;
  virtual Status Read(uint64_t offset, std::span<uint8_t> out) = 0;
  virtual Status Write(uint64_t offset, std::span<const uint8_t> data) = 0;
  // Makes every write so far durable.
  virtual Status Sync() = 0;
};

// kInvalidArgument "NAME: LEN bytes at byte 0x.. are outside its SIZE bytes"
// unless [offset, offset + len) lies within [0, size).
Status CheckRange(std::string_view name, uint64_t size, uint64_t offset, uint64_t len);

class FdBlockIo final : public BlockIo {
 public:
  // Does not own `fd`. `writable` false makes Write and Sync fail.
  FdBlockIo(int fd, std::string name, uint64_t base, uint64_t size, bool writable);
  // The whole of a file or block device (its size from fstat / BLKGETSIZE64).
  static Result<FdBlockIo> Whole(int fd, std::string name, bool writable);

  std::string_view name() const override { return name_; }
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, std::span<uint8_t> out) override;
  Status Write(uint64_t offset, std::span<const uint8_t> data) override;
  Status Sync() override;

 private:
  int fd_;
  std::string name_;
  uint64_t base_, size_;
  bool writable_;
};

}  // namespace flashpipe::lp
