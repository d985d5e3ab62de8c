#include "host/record_sink.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/crc32.h"
#include "base/fd_io.h"

namespace flashpipe::host {
namespace {

constexpr uint32_t kRawBlockSize = 4096;
constexpr size_t kReadPiece = 1 << 20;

}  // namespace

// Runs of one kind, turned into records as they close; offsets in bytes.
class RecordSink::Runs : public sparse::BlockSink {
 public:
  Runs(RecordOut* out, uint32_t blk, bool with_payload)
      : out_(out), blk_(blk), cap_(std::max<uint64_t>(blk, kMaxRawRecordBytes / blk * blk)),
        with_payload_(with_payload) {}

  // Classified raw content: whole blocks from block 0 on, in order.
  Status OnDataBlocks(std::span<const uint8_t> blocks) override {
    FP_RETURN_IF_ERROR(Raw(pos_, blocks, blocks.size()));
    pos_ += blocks.size();
    return Status::Ok();
  }
  Status OnUniformBlocks(uint64_t blocks, uint32_t pattern) override {
    FP_RETURN_IF_ERROR(Fill(pos_, blocks * blk_, pattern));
    pos_ += blocks * blk_;
    return Status::Ok();
  }
  Status OnUndefinedBlocks(uint64_t blocks) override {
    pos_ += blocks * blk_;
    return Close();
  }

  // `n` RAW bytes at image byte `offset`; `bytes` holds them unless they are
  // not read (empty). A run goes on where the last one ended.
  Status Raw(uint64_t offset, std::span<const uint8_t> bytes, uint64_t n) {
    if (kind_ != sparse::kChunkRaw || offset != run_start_ + run_bytes_) {
      FP_RETURN_IF_ERROR(Close());
      if (offset % blk_ != 0) return Corrupt(fmt::format("RAW data at byte {} is not on a block boundary", offset));
      StartRaw(offset);
    }
    while (n > 0) {
      uint64_t k = std::min(n, cap_ - run_bytes_);
      if (with_payload_ && !bytes.empty()) FP_RETURN_IF_ERROR(out_->OnPayload(bytes.first(k)));
      if (!bytes.empty()) bytes = bytes.subspan(k);
      Count(k);
      n -= k;
      if (run_bytes_ == cap_) {
        FP_RETURN_IF_ERROR(Close());
        StartRaw(offset + k);
      }
      offset += k;
    }
    return Status::Ok();
  }

  // RAW bytes read straight into the payload stream's memory.
  void Counted(uint64_t n) { Count(n); }
  uint64_t raw_room() const { return cap_ - run_bytes_; }
  // A RAW run ended at a cap boundary: the next one starts at `offset`.
  Status Rollover(uint64_t offset) {
    if (run_bytes_ < cap_) return Status::Ok();
    FP_RETURN_IF_ERROR(Close());
    StartRaw(offset);
    return Status::Ok();
  }
  Status BeginRaw(uint64_t offset) {
    if (kind_ == sparse::kChunkRaw && offset == run_start_ + run_bytes_) return Rollover(offset);
    FP_RETURN_IF_ERROR(Close());
    if (offset % blk_ != 0) return Corrupt(fmt::format("RAW data at byte {} is not on a block boundary", offset));
    StartRaw(offset);
    return Status::Ok();
  }

  Status Fill(uint64_t offset, uint64_t length, uint32_t pattern) {
    if (offset % blk_ != 0 || length % blk_ != 0) {
      return Corrupt(fmt::format("FILL of {} bytes at byte {} is not whole blocks", length, offset));
    }
    for (uint64_t at = offset / blk_, blocks = length / blk_; blocks > 0;) {
      bool extends = kind_ == sparse::kChunkFill && pattern == fill_.pattern && at == fill_.end() &&
                     fill_.blocks < UINT32_MAX;
      if (!extends) {
        FP_RETURN_IF_ERROR(Close());
        kind_ = sparse::kChunkFill;
        fill_ = Record{sparse::kChunkFill, at, 0, pattern, 0};
      }
      uint64_t k = std::min<uint64_t>(blocks, UINT32_MAX - fill_.blocks);
      fill_.blocks += static_cast<uint32_t>(k);
      at += k;
      blocks -= k;
    }
    return Status::Ok();
  }

  Status Close() {
    uint16_t kind = std::exchange(kind_, 0);
    if (kind == sparse::kChunkFill && fill_.blocks > 0) return out_->OnRecord(fill_);
    if (kind != sparse::kChunkRaw || run_bytes_ == 0) return Status::Ok();
    if (run_bytes_ % blk_ != 0) {
      return Corrupt(fmt::format("RAW data at byte {} ends inside a block ({} bytes)", run_start_, run_bytes_));
    }
    Record r{sparse::kChunkRaw, run_start_ / blk_, static_cast<uint32_t>(run_bytes_ / blk_), 0, run_payload_};
    run_bytes_ = 0;
    return out_->OnRecord(r);
  }

  uint64_t payload() const { return payload_; }

 private:
  void StartRaw(uint64_t offset) {
    kind_ = sparse::kChunkRaw;
    run_start_ = offset;
    run_bytes_ = 0;
    run_payload_ = payload_;
  }
  void Count(uint64_t n) {
    run_bytes_ += n;
    payload_ += n;
  }

  RecordOut* out_;
  uint32_t blk_;
  uint64_t cap_;  // RAW bytes per record
  bool with_payload_;
  uint64_t pos_ = 0;  // classified content: the next byte
  uint16_t kind_ = 0;
  uint64_t run_start_ = 0, run_bytes_ = 0, run_payload_ = 0;
  Record fill_;
  uint64_t payload_ = 0;  // payload bytes so far
};

RecordSink::RecordSink(RecordOut* out, RecordSinkOptions options) : out_(out), options_(options) {}

RecordSink::~RecordSink() = default;

uint64_t RecordSink::payload_bytes() const { return runs_ ? runs_->payload() : 0; }

Status RecordSink::Start() {
  if (started_) return Status::Ok();
  started_ = true;
  ImageShape shape{.blk_sz = kRawBlockSize, .sparse_input = false, .bmap = options_.bmap};
  if (options_.raw_size) {
    shape.bytes = *options_.raw_size;
    shape.blocks = (*options_.raw_size + kRawBlockSize - 1) / kRawBlockSize;
  }
  blk_ = shape.blk_sz;
  runs_ = std::make_unique<Runs>(out_, blk_, options_.with_payload);
  classifier_ = std::make_unique<sparse::BlockClassifier>(runs_.get(), blk_, options_.raw_size.value_or(UINT64_MAX));
  return out_->OnShape(shape);
}

Status RecordSink::OnHeader(const sparse::FileHeader& h) {
  if (started_) return Corrupt("a second sparse header: overlaid parts are flashed one at a time");
  started_ = true;
  blk_ = h.blk_sz;
  runs_ = std::make_unique<Runs>(out_, blk_, options_.with_payload);
  return out_->OnShape({.blk_sz = h.blk_sz, .blocks = h.total_blks, .bytes = h.image_size(), .sparse_input = true});
}

Status RecordSink::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  FP_RETURN_IF_ERROR(Start());
  if (classifier_) return classifier_->OnRaw(offset, data);
  return runs_->Raw(offset, data, data.size());
}

Status RecordSink::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  FP_RETURN_IF_ERROR(Start());
  if (classifier_) return classifier_->OnFill(offset, length, pattern);
  return runs_->Fill(offset, length, pattern);
}

Status RecordSink::OnSkip(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(Start());
  if (classifier_) return classifier_->OnSkip(offset, length);
  return runs_->Close();
}

Result<uint32_t> RecordSink::RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) {
  FP_RETURN_IF_ERROR(Start());
  bool sparse_raw = classifier_ == nullptr;
  if (sparse_raw) out_->OnPayloadInFile(runs_->payload(), in_offset, n);
  if (sparse_raw && !options_.with_payload) {
    FP_RETURN_IF_ERROR(runs_->Raw(out_offset, {}, n));
    return 0u;  // not read: the planning pass does not check CRC32 chunks
  }
  uint32_t crc = 0;
  std::vector<uint8_t> buf;
  for (uint64_t done = 0; done < n;) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(n - done, kReadPiece));
    std::span<uint8_t> dst;
    if (sparse_raw) {
      // Straight into the payload stream when it offers room.
      FP_RETURN_IF_ERROR(runs_->BeginRaw(out_offset + done));
      want = static_cast<size_t>(std::min<uint64_t>(want, runs_->raw_room()));
      dst = out_->PayloadSpace(want);
    }
    bool direct = !dst.empty();
    if (!direct) {
      buf.resize(std::max(buf.size(), want));
      dst = std::span(buf).first(want);
    }
    FP_ASSIGN_OR_RETURN(size_t r, PreadUpTo(fd, dst, in_offset + done, "the image"));
    if (r == 0) return Corrupt(fmt::format("input ends at byte {}, {} bytes short", in_offset + done, n - done));
    auto got = dst.first(r);
    if (sparse_raw && options_.crc) crc = Crc32Update(crc, got.data(), got.size());
    if (direct) {
      FP_RETURN_IF_ERROR(out_->CommitPayload(r));
      runs_->Counted(r);
      FP_RETURN_IF_ERROR(runs_->Rollover(out_offset + done + r));
    } else {
      FP_RETURN_IF_ERROR(OnRaw(out_offset + done, got));
    }
    done += r;
  }
  return crc;
}

Status RecordSink::OnChunk(const sparse::ChunkInfo& chunk) {
  return chunk.type == sparse::kChunkCrc32 ? out_->OnCrcChunk() : Status::Ok();
}

Status RecordSink::Finish(uint64_t image_size) {
  FP_RETURN_IF_ERROR(Start());
  if (classifier_) FP_RETURN_IF_ERROR(classifier_->SkipTo(image_size));
  return runs_->Close();
}

}  // namespace flashpipe::host
