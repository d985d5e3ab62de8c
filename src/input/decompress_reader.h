// DecompressReader: a ByteReader over the decompressed content of a
// compressed ByteReader, decompressing on its own thread.
//
// The thread reads compressed bytes, runs the Codec and fills buffers of
// buffer_size from a fixed pool of `buffers`; the consumer takes them in order.
// Memory is buffers * buffer_size plus one compressed read buffer, whatever
// the image size. Errors (corrupt or truncated streams, read errors) are
// reported by the consumer's Read after the data before them, with the
// compressed and decompressed byte offsets:
//   "gzip of x.img.gz: truncated: input ends inside a member at compressed
//    byte 81920 (decompressed byte 1048576)"
// Destroying the reader cancels the source and joins the thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "input/byte_reader.h"
#include "input/codec.h"

namespace flashpipe::input {

struct DecompressOptions {
  size_t buffer_size = 1 << 20;
  unsigned buffers = 4;
  size_t input_chunk = 256 << 10;
};

class DecompressReader : public ByteReader {
 public:
  // REQUIRES: IsCompressed(kind).
  static Result<std::unique_ptr<DecompressReader>> Start(ImageKind kind, std::unique_ptr<ByteReader> source,
                                                         DecompressOptions options = {});
  ~DecompressReader() override;

  Result<size_t> Read(std::span<uint8_t> out) override;
  uint64_t position() const override { return position_; }
  const std::string& name() const override { return name_; }
  void Cancel() override;

 private:
  struct Block {
    std::vector<uint8_t> data;
    size_t size = 0;
  };
  DecompressReader(std::unique_ptr<Codec> codec, std::unique_ptr<ByteReader> source, std::string name,
                   DecompressOptions options);
  void Produce();
  Status ProduceAll();
  Status Decode(Block& block, bool* eof);
  Status Deliver(Block block);  // hands a full block to the consumer
  Result<Block> TakeFree();

  std::unique_ptr<Codec> codec_;
  std::unique_ptr<ByteReader> source_;
  std::string name_;
  DecompressOptions options_;
  // Producer-only state.
  std::vector<uint8_t> in_;
  size_t in_pos_ = 0, in_end_ = 0;
  uint64_t produced_ = 0;
  // Shared state.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Block> ready_;
  std::vector<Block> free_;
  bool done_ = false;
  bool stop_ = false;
  Status error_;
  // Consumer-only state.
  Block current_;
  size_t current_pos_ = 0;
  uint64_t position_ = 0;
  std::thread thread_;
};

}  // namespace flashpipe::input
