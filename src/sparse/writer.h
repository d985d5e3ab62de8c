// Writing sparse images: where the bytes go (Output) and how chunks are laid
// out (ChunkWriter). The encoder, resparse and append2simg share them.
//
// Output is a byte sink that appends; a seekable one can also patch bytes it
// already wrote (the encoder patches RAW chunk headers and total_chunks when
// it learns them). FdOutput writes to a file descriptor (seekable when the fd
// is a regular file or block device not opened with O_APPEND); CallbackOutput hands each slice to a
// function and is never seekable.
//
// ChunkWriter stages headers and small payloads in a fixed 1 MiB buffer and
// writes large RAW payloads straight from the caller's memory, so a chunk
// costs no syscall of its own. Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/status.h"
#include "sparse/format.h"

namespace flashpipe::sparse {

class Output {
 public:
  virtual ~Output() = default;
  // Appends `a` then `b` (either may be empty).
  virtual Status Write(std::span<const uint8_t> a, std::span<const uint8_t> b = {}) = 0;
  virtual bool seekable() const { return false; }
  // REQUIRES: seekable(); offset + data.size() <= bytes written so far.
  virtual Status WriteAt(uint64_t offset, std::span<const uint8_t> data);
  // Appends `len` bytes of `in_fd` from `in_offset` (pread + Write unless
  // the output can do better, e.g. copy_file_range).
  virtual Status CopyFrom(int in_fd, uint64_t in_offset, uint64_t len, std::string_view in_name);
};

// Where an output descriptor can be written with pwrite and patched later:
// a regular file or a block device, not O_APPEND (pwrite would append).
// nullopt for a stream (pipe, socket, terminal).
struct PatchableFd {
  uint64_t base = 0;      // the descriptor's position: writing starts there
  bool regular = false;   // a regular file (not a block device)
};
std::optional<PatchableFd> ProbePatchable(int fd);

class FdOutput : public Output {
 public:
  // Does not own `fd`. Writing starts at the fd's current position.
  FdOutput(int fd, std::string name);
  Status Write(std::span<const uint8_t> a, std::span<const uint8_t> b = {}) override;
  bool seekable() const override { return seekable_; }
  Status WriteAt(uint64_t offset, std::span<const uint8_t> data) override;
  Status CopyFrom(int in_fd, uint64_t in_offset, uint64_t len, std::string_view in_name) override;

 private:
  int fd_;
  std::string name_;
  Status Advance(uint64_t n);

  bool seekable_ = false;
  bool regular_ = false;
  uint64_t base_ = 0;  // fd position when we started
  uint64_t pos_ = 0;   // bytes written by us
  uint64_t writeback_from_ = 0;
};

// Starts writeback of a regular file's dirty range every 32 MiB so that
// the final fsync, which every flashpipe output gets, finds little left to
// do: the disk works while we compute. Fire-and-forget (errors show at fsync).
class WritebackKicker {
 public:
  explicit WritebackKicker(int fd) : fd_(fd) {}
  // Call after writing up to `end` (exclusive), in mostly increasing order.
  void Wrote(uint64_t end);

 private:
  int fd_;
  uint64_t from_ = 0;
};

class CallbackOutput : public Output {
 public:
  using Fn = std::function<Status(std::span<const uint8_t>)>;
  explicit CallbackOutput(Fn fn) : fn_(std::move(fn)) {}
  Status Write(std::span<const uint8_t> a, std::span<const uint8_t> b = {}) override;

 private:
  Fn fn_;
};

class ChunkWriter {
 public:
  // `out` must outlive the writer. Headers are 28/12 bytes.
  ChunkWriter(Output* out, uint32_t blk_sz);
  ~ChunkWriter();

  Status FileHeader(uint32_t total_blks, uint32_t total_chunks);
  Status Fill(uint32_t blocks, uint32_t pattern);
  Status DontCare(uint32_t blocks);
  Status Crc32(uint32_t value);
  // A RAW chunk header; exactly blocks * blk_sz payload bytes must follow
  // through RawData / RawFrom.
  Status RawHeader(uint32_t blocks);
  Status RawData(std::span<const uint8_t> data);
  Status RawFrom(int fd, uint64_t offset, uint64_t len, std::string_view name);
  // Overwrites bytes at `offset` (< offset()): in the staging buffer if still
  // there, else through Output::WriteAt. Used to patch headers.
  Status Patch(uint64_t offset, std::span<const uint8_t> data);
  Status PatchRawHeader(uint64_t header_offset, uint32_t blocks);
  Status PatchFileHeader(uint32_t total_blks, uint32_t total_chunks);
  Status Flush();

  uint64_t offset() const { return flushed_ + staged_; }  // bytes emitted so far
  uint32_t chunks() const { return chunks_; }
  uint32_t blk_sz() const { return blk_sz_; }

 private:
  Status Stage(std::span<const uint8_t> data);
  Status ChunkHeader(uint16_t type, uint32_t blocks, uint32_t payload);

  Output* out_;
  uint32_t blk_sz_;
  std::unique_ptr<uint8_t[]> buf_;
  size_t staged_ = 0;
  uint64_t flushed_ = 0;
  uint32_t chunks_ = 0;
};

}  // namespace flashpipe::sparse
