// ImageWriter, event side: the decoder's events become aligned requests.
#include "io/image_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/crc32.h"
#include "base/fd_io.h"
#include "base/zero.h"
#include "io/writer_impl.h"

namespace flashpipe::io {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kMinDirectRange = 64 * 1024;  // smaller fills just become data
constexpr uint64_t kProgressStep = 16 * kMiB;

uint64_t AlignDown(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

ImageWriter::ImageWriter() : impl_(std::make_unique<Impl>()) {}
ImageWriter::~ImageWriter() {
  impl_->DrainAll();
  impl_->ReturnBuffers();
}

Status ImageWriter::Impl::CheckEvent(uint64_t offset, uint64_t length) {
  if (!failed.ok()) return failed;
  if (finished) return InvalidArgument("writer: event after Finish()");
  FP_RETURN_IF_ERROR(CheckCancel(options.cancel));
  for (const auto& d : devs)
    if (offset > d.dev.window_size || length > d.dev.window_size - offset) {
      if (failed_device < 0) failed_device = static_cast<int>(&d - devs.data());
      return NoSpace(fmt::format("image range 0x{:x}+{} goes beyond the end of {} (size {})", offset,
                                 length, d.dev.name, d.dev.window_size));
    }
  return Status::Ok();
}

Status ImageWriter::Impl::PutData(uint64_t offset, uint64_t length, const FillFn& fill) {
  while (length > 0) {
    if (cur < 0 || offset != cur_end || cur_end == cur_base + request_size) {
      FP_RETURN_IF_ERROR(CheckCancel(options.cancel));  // a long RAW range stops between requests
      FP_RETURN_IF_ERROR(FlushStaging());
      FP_ASSIGN_OR_RETURN(cur, AcquirePool());
      cur_base = AlignDown(offset, align);
      cur_begin = cur_end = offset;
    }
    uint64_t take = std::min(length, cur_base + request_size - offset);
    FP_RETURN_IF_ERROR(fill(pool[cur].data() + (offset - cur_base), take, offset));
    cur_end += take;
    offset += take;
    length -= take;
    if (cur_end == cur_base + request_size) FP_RETURN_IF_ERROR(FlushStaging());
  }
  return Status::Ok();
}

// Issues the staged bytes: whole blocks from the shared buffer on every
// device, a partial first or last block by read-modify-write per device.
Status ImageWriter::Impl::FlushStaging() {
  if (cur < 0) return Status::Ok();
  int buf = cur;
  uint64_t begin = cur_begin, end = cur_end;
  cur = -1;
  struct Unref {
    Impl* m;
    int b;
    ~Unref() { --m->pool_refs[b]; }
  } unref{this, buf};
  uint8_t* base = pool[buf].data() - cur_base;  // image offset -> pointer
  uint64_t fb = AlignUp(begin, align), fe = AlignDown(end, align);
  if (fb < fe) FP_RETURN_IF_ERROR(WriteBlocks(fb, fe, base + fb, {BufRef::kPool, buf}));
  if (begin % align != 0) {
    uint64_t block = AlignDown(begin, align);
    uint64_t hi = std::min(end, block + align);
    FP_RETURN_IF_ERROR(ReadModifyWrite(block, begin, hi, base + begin));
  }
  if (end % align != 0 && AlignDown(end, align) >= fb) {
    uint64_t block = AlignDown(end, align);
    FP_RETURN_IF_ERROR(ReadModifyWrite(block, block, end, base + block));
  }
  Progress(end);
  return Status::Ok();
}

Status ImageWriter::Impl::WriteData(uint64_t begin, uint64_t end, uint8_t* src, BufRef ref) {
  std::vector<uint32_t> crcs;
  if (options.verify) crcs = devs[0].digests.BlockCrcs({src, end - begin});
  for (auto& d : devs) {
    if (options.verify) d.digests.PutBlocks(begin, crcs);
    FP_RETURN_IF_ERROR(Issue(d, OpKind::kWrite, begin, end - begin, src, ref));
  }
  return Status::Ok();
}

// Runs of whole zero blocks (granule: 4 KiB or the device block, whichever is
// larger) of at least kMinDirectRange are zeroed instead of written; a data
// block usually shows a non-zero word at once, so the scan costs little.
Status ImageWriter::Impl::WriteBlocks(uint64_t begin, uint64_t end, uint8_t* src, BufRef ref) {
  if (options.zero_mode != ZeroMode::kAuto || end - begin < kMinDirectRange) {
    return WriteData(begin, end, src, ref);
  }
  const uint64_t g = std::max<uint64_t>(align, 4096);
  uint64_t data_from = begin;
  uint64_t at = AlignUp(begin, g);
  while (at < end) {
    uint64_t run = at;
    while (run + g <= end && IsAllZero({src + (run - begin), g})) run += g;
    if (run - at >= kMinDirectRange) {
      if (data_from < at) FP_RETURN_IF_ERROR(WriteData(data_from, at, src + (data_from - begin), ref));
      FP_RETURN_IF_ERROR(ZeroRange(at, run));
      data_from = run;
    }
    at = run + g;  // the block after a run (or a data block) starts the next
  }
  if (data_from < end) FP_RETURN_IF_ERROR(WriteData(data_from, end, src + (data_from - begin), ref));
  return Status::Ok();
}

Status ImageWriter::Impl::Fill(uint64_t offset, uint64_t length, uint32_t pattern) {
  uint8_t bytes[4];
  std::memcpy(bytes, &pattern, 4);
  FillFn put = [&](uint8_t* dst, uint64_t n, uint64_t at) {
    for (uint64_t i = 0; i < n; ++i) dst[i] = bytes[(at - offset + i) % 4];
    return Status::Ok();
  };
  uint64_t ib = AlignUp(offset, align), ie = AlignDown(offset + length, align);
  bool zero = pattern == 0 && options.zero_mode == ZeroMode::kAuto;
  if (ie <= ib || ie - ib < kMinDirectRange || offset % 4 != 0) return PutData(offset, length, put);
  FP_RETURN_IF_ERROR(PutData(offset, ib - offset, put));
  FP_RETURN_IF_ERROR(FlushStaging());
  FP_RETURN_IF_ERROR(zero ? ZeroRange(ib, ie) : PatternRange(ib, ie, pattern));
  FP_RETURN_IF_ERROR(PutData(ie, offset + length - ie, put));
  Progress(offset + length);
  return Status::Ok();
}

Status ImageWriter::Impl::PatternRange(uint64_t begin, uint64_t end, uint32_t pattern) {
  FP_ASSIGN_OR_RETURN(int p, AcquirePattern(pattern));
  for (uint64_t at = begin; at < end; at += request_size) {
    uint64_t n = std::min(request_size, end - at);
    for (auto& d : devs) {
      FP_RETURN_IF_ERROR(Issue(d, OpKind::kWrite, at, n, patterns[p].mem.data(), {BufRef::kPattern, p}));
    }
  }
  if (options.verify)
    for (auto& d : devs) d.digests.PutPattern(begin, end, pattern);
  return Status::Ok();
}

// Zero FILL: BLKZEROOUT on block devices; on files a hole, or nothing at all
// where a fresh file was never written.
Status ImageWriter::Impl::ZeroRange(uint64_t begin, uint64_t end) {
  for (auto& d : devs) {
    uint64_t stop = end;
    OpKind kind = d.dev.geometry.block_device ? OpKind::kZeroOut : OpKind::kPunchHole;
    if (!d.dev.geometry.block_device && d.dev.reads_zero)
      stop = std::min(end, AlignUp(d.written_end, align));
    if (begin < stop) FP_RETURN_IF_ERROR(Issue(d, kind, begin, stop - begin, nullptr, {}));
    if (options.verify) d.digests.PutPattern(begin, end, 0);
  }
  stats.bytes_zeroed += end - begin;
  return Status::Ok();
}

Status ImageWriter::Impl::Skip(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(FlushStaging());
  uint64_t ib = AlignUp(offset, align), ie = AlignDown(offset + length, align);
  bool discarded = false;
  if (options.discard && ib < ie) {
    for (auto& d : devs) {
      if (!d.dev.geometry.block_device) continue;
      FP_RETURN_IF_ERROR(Issue(d, OpKind::kDiscard, ib, ie - ib, nullptr, {}));
      if (options.verify) d.digests.Erase(ib, ie);
      discarded |= &d == &devs[0];
    }
  }
  if (discarded) {
    stats.bytes_discarded += ie - ib;
    stats.bytes_skipped += length - (ie - ib);
  } else {
    stats.bytes_skipped += length;
  }
  Progress(offset + length);
  return Status::Ok();
}

void ImageWriter::Impl::Progress(uint64_t end) {
  progress_done = std::max(progress_done, end);
  if (!options.progress || progress_done < progress_reported + kProgressStep) return;
  progress_reported = progress_done;
  options.progress(progress_done, stats.image_size);
}

Status ImageWriter::Impl::Finish() {
  if (finished) return InvalidArgument("writer: Finish() called twice");
  Status s = failed.ok() ? CheckCancel(options.cancel) : failed;
  if (s.ok()) s = FlushStaging();
  if (!s.ok() && failed.ok()) failed = s;
  finished = true;
  DrainAll();
  if (!failed.ok()) return failed;
  stats.image_size = std::max(stats.image_size, progress_done);
  if (options.progress) options.progress(progress_done, stats.image_size);
  Phase(WritePhase::kSync, 0, 0);
  if (hold_len > 0) {
    for (auto& d : devs) {
      if (Status st = d.dev.queue->Sync(); !st.ok()) return Fail(d, st.WithContext(d.dev.name));
    }
    FP_RETURN_IF_ERROR(WriteHolds());
  }
  FP_RETURN_IF_ERROR(TrimFiles());
  for (auto& d : devs) {
    if (!options.sync && !options.verify) break;
    if (Status st = d.dev.queue->Sync(); !st.ok()) (void)Fail(d, st.WithContext(d.dev.name));
  }
  if (!failed.ok()) return failed;
  if (options.verify) {
    uint64_t done = 0, total = VerifyBytes();
    Phase(WritePhase::kVerify, 0, total);
    for (auto& d : devs) {
      Status st = Verify(d, &done, total);
      if (!st.ok()) return st.code() == Code::kCancelled ? st : Fail(d, st);
    }
    stats.verified = true;
  }
  return Status::Ok();
}

Status ImageWriter::OnHeader(const sparse::FileHeader& header) {
  Impl& m = *impl_;
  if (!m.failed.ok()) return m.failed;
  uint64_t size = header.image_size();
  for (const auto& d : m.devs)
    if (size > d.dev.window_size)
      return NoSpace(fmt::format("image of {} bytes does not fit {} ({} bytes)", size, d.dev.name,
                                 d.dev.window_size));
  m.stats.image_size = std::max(m.stats.image_size, size);
  return Status::Ok();
}

Status ImageWriter::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  FP_RETURN_IF_ERROR(impl_->CheckEvent(offset, data.size()));
  if (impl_->options.borrow_raw) return impl_->PutBorrowed(offset, data);
  return impl_->PutData(offset, data.size(), [&](uint8_t* dst, uint64_t n, uint64_t at) {
    std::memcpy(dst, data.data() + (at - offset), n);
    return Status::Ok();
  });
}

// borrow_raw: the aligned middle of `data` goes to the devices straight from
// the caller's memory in requests of request_size; the unaligned edges (and
// stretches too short to be worth a request of their own) are staged.
Status ImageWriter::Impl::PutBorrowed(uint64_t offset, std::span<const uint8_t> data) {
  auto staged = [&](uint64_t at, uint64_t n) {
    const uint8_t* src = data.data() + (at - offset);
    return PutData(at, n, [src, at](uint8_t* dst, uint64_t len, uint64_t pos) {
      std::memcpy(dst, src + (pos - at), len);
      return Status::Ok();
    });
  };
  uint64_t end = offset + data.size();
  uint64_t ib = AlignUp(offset, align), ie = AlignDown(end, align);
  const uint8_t* mid = data.data() + (ib - offset);
  if (ie <= ib || ie - ib < kMinDirectRange || reinterpret_cast<uintptr_t>(mid) % mem_align != 0) {
    return staged(offset, data.size());
  }
  FP_RETURN_IF_ERROR(staged(offset, ib - offset));
  FP_RETURN_IF_ERROR(FlushStaging());
  for (uint64_t at = ib; at < ie;) {
    uint64_t n = std::min(request_size - (at % request_size), ie - at);  // on the request grid
    auto* p = const_cast<uint8_t*>(mid + (at - ib));  // only read by the device
    uint64_t written = stats.bytes_written;
    FP_RETURN_IF_ERROR(WriteBlocks(at, at + n, p, {BufRef::kNone, -1}));
    stats.bytes_borrowed += stats.bytes_written - written;
    at += n;
    Progress(at);
  }
  return staged(ie, end - ie);
}

Status ImageWriter::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  FP_RETURN_IF_ERROR(impl_->CheckEvent(offset, length));
  return impl_->Fill(offset, length, pattern);
}

Status ImageWriter::OnSkip(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(impl_->CheckEvent(offset, length));
  return impl_->Skip(offset, length);
}

Status ImageWriter::OnEnd() { return impl_->failed; }

Result<uint32_t> ImageWriter::WriteRawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) {
  FP_RETURN_IF_ERROR(impl_->CheckEvent(out_offset, n));
  uint32_t crc = 0;
  FP_RETURN_IF_ERROR(impl_->PutData(out_offset, n, [&](uint8_t* dst, uint64_t len, uint64_t at) {
    FP_RETURN_IF_ERROR(PreadExact(fd, {dst, len}, in_offset + (at - out_offset), "the image"));
    crc = Crc32Update(crc, dst, len);
    return Status::Ok();
  }));
  return crc;
}

Status ImageWriter::Finish() { return impl_->Finish(); }

std::optional<size_t> ImageWriter::failed_device() const {
  if (impl_->failed_device < 0) return std::nullopt;
  return static_cast<size_t>(impl_->failed_device);
}
const WriteStats& ImageWriter::stats() const { return impl_->stats; }

}  // namespace flashpipe::io
