#include "input/decompress_reader.h"

#include <algorithm>
#include <cstring>

namespace flashpipe::input {

Result<std::unique_ptr<DecompressReader>> DecompressReader::Start(ImageKind kind,
                                                                  std::unique_ptr<ByteReader> source,
                                                                  DecompressOptions options) {
  FP_ASSIGN_OR_RETURN(auto codec, MakeCodec(kind));
  std::string name = fmt::format("{} of {}", KindName(kind), source->name());
  std::unique_ptr<DecompressReader> r(
      new DecompressReader(std::move(codec), std::move(source), std::move(name), options));
  r->thread_ = std::thread([p = r.get()] { p->Produce(); });
  return r;
}

DecompressReader::DecompressReader(std::unique_ptr<Codec> codec, std::unique_ptr<ByteReader> source,
                                   std::string name, DecompressOptions options)
    : codec_(std::move(codec)), source_(std::move(source)), name_(std::move(name)), options_(options),
      in_(options.input_chunk) {
  for (unsigned i = 0; i < std::max(2u, options.buffers); ++i) {
    free_.push_back(Block{std::vector<uint8_t>(options.buffer_size), 0});
  }
}

DecompressReader::~DecompressReader() {
  Cancel();
  if (thread_.joinable()) thread_.join();
}

void DecompressReader::Cancel() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  source_->Cancel();
  cv_.notify_all();
}

void DecompressReader::Produce() {
  Status s = ProduceAll();
  std::lock_guard<std::mutex> l(mu_);
  error_ = s;
  done_ = true;
  cv_.notify_all();
}

Status DecompressReader::ProduceAll() {
  bool eof = false;
  while (!eof) {
    FP_ASSIGN_OR_RETURN(Block block, TakeFree());
    FP_RETURN_IF_ERROR(Decode(block, &eof));
    if (block.size > 0) FP_RETURN_IF_ERROR(Deliver(std::move(block)));
  }
  return Status::Ok();
}

// Fills `block` until it is full or the compressed input ends cleanly.
// Every error of this stream is "NAME: what at compressed byte X
// (decompressed byte Y)", the name and the place said once.
Status DecompressReader::Decode(Block& block, bool* eof) {
  block.size = 0;
  auto where = [&] {
    return fmt::format("at compressed byte {} (decompressed byte {})", source_->position() - (in_end_ - in_pos_),
                       produced_ + block.size);
  };
  auto fail = [&](const Status& s) {
    return Status(s.code(), fmt::format("{}: {} {}", name_, s.message(), where()), s.sys_errno());
  };
  while (block.size < block.data.size()) {
    if (in_pos_ == in_end_) {
      FP_ASSIGN_OR_RETURN(size_t n, source_->Read(in_));
      in_pos_ = 0;
      in_end_ = n;
      if (n == 0) {
        auto fin = codec_->Finish(std::span(block.data).subspan(block.size));
        if (!fin.ok()) return fail(fin.status());
        block.size += *fin;
        if (*fin > 0 && !codec_->AtBoundary()) continue;  // more to flush
        if (!codec_->AtBoundary()) {
          return fail(Corrupt("truncated: input ends inside a member"));
        }
        *eof = true;
        break;
      }
    }
    auto step = codec_->Step(std::span(in_).subspan(in_pos_, in_end_ - in_pos_),
                             std::span(block.data).subspan(block.size));
    if (!step.ok()) return fail(step.status());
    in_pos_ += step->consumed;
    block.size += step->produced;
    if (step->consumed == 0 && step->produced == 0 && in_pos_ < in_end_) {
      // The codec wants more than what is buffered: keep the tail, read more.
      std::memmove(in_.data(), in_.data() + in_pos_, in_end_ - in_pos_);
      in_end_ -= in_pos_;
      in_pos_ = 0;
      if (in_end_ == in_.size()) return fail(Internal("decoder made no progress"));
      FP_ASSIGN_OR_RETURN(size_t n, source_->Read(std::span(in_).subspan(in_end_)));
      if (n == 0) return fail(Corrupt("truncated: input ends inside a member"));
      in_end_ += n;
    }
  }
  produced_ += block.size;
  return Status::Ok();
}

Result<DecompressReader::Block> DecompressReader::TakeFree() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return stop_ || !free_.empty(); });
  if (stop_) return Cancelled(fmt::format("{}: cancelled", name_));
  Block b = std::move(free_.back());
  free_.pop_back();
  return b;
}

Status DecompressReader::Deliver(Block block) {
  std::lock_guard<std::mutex> l(mu_);
  if (stop_) return Cancelled(fmt::format("{}: cancelled", name_));
  ready_.push_back(std::move(block));
  cv_.notify_all();
  return Status::Ok();
}

Result<size_t> DecompressReader::Read(std::span<uint8_t> out) {
  if (current_pos_ == current_.size) {
    std::unique_lock<std::mutex> l(mu_);
    if (!current_.data.empty()) free_.push_back(std::move(current_));
    current_ = Block{};
    current_pos_ = 0;
    cv_.notify_all();
    cv_.wait(l, [&] { return !ready_.empty() || done_; });
    if (ready_.empty()) {
      if (!error_.ok()) return error_;
      return size_t{0};
    }
    current_ = std::move(ready_.front());
    ready_.pop_front();
  }
  size_t n = std::min(out.size(), current_.size - current_pos_);
  std::memcpy(out.data(), current_.data.data() + current_pos_, n);
  current_pos_ += n;
  position_ += n;
  return n;
}

}  // namespace flashpipe::input
