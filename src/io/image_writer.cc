// ImageWriter, event side: the decoder's events become aligned requests.
#include "io/image_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/crc32.h"
#include "io/writer_impl.h"

namespace flashpipe::io {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kMaxRequest = 4 * kMiB;     // bounds the pool at 6 x 4 MiB
constexpr uint64_t kMinDirectRange = 64 * 1024;  // smaller fills just become data
constexpr uint64_t kProgressStep = 16 * kMiB;

uint64_t AlignDown(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The file's end is the window's end, so its last block may be written whole.
bool Extendable(const Device& d) {
  return d.file_fd >= 0 && !d.geometry.block_device &&
         d.window_offset + d.window_size == d.geometry.size;
}

// The largest power of two <= every device's preferred alignment at which
// every window starts (and ends, unless the file can be trimmed afterwards).
Result<uint64_t> CommonAlignment(const std::vector<Device>& devices) {
  uint64_t a = 512;
  for (const auto& d : devices) a = std::max<uint64_t>(a, d.geometry.offset_align);
  auto fits = [&](uint64_t x) {
    return std::all_of(devices.begin(), devices.end(), [&](const Device& d) {
      return d.window_offset % x == 0 && (d.window_size % x == 0 || Extendable(d));
    });
  };
  while (a > 512 && !fits(a)) a /= 2;
  for (const auto& d : devices)
    if (a < d.geometry.logical_block || d.window_offset % a != 0)
      return InvalidArgument(fmt::format("{}: window 0x{:x}+{} is not aligned to the {}-byte block",
                                         d.name, d.window_offset, d.window_size, d.geometry.logical_block));
  return a;
}

uint64_t DefaultRequestSize(const Geometry& g) {
  uint64_t rs = g.optimal_io ? g.optimal_io : g.max_request;
  return std::clamp<uint64_t>(rs, kMiB, kMaxRequest);
}

}  // namespace

Device DeviceFor(const Target& target, IoQueue* queue) {
  Device d;
  d.name = target.path();
  d.queue = queue;
  d.geometry = target.geometry();
  d.window_offset = target.window_offset();
  d.window_size = target.window_size();
  d.reads_zero = target.fresh();
  if (!target.geometry().block_device) d.file_fd = target.fd();
  return d;
}

Result<ZeroMode> ParseZeroMode(std::string_view name) {
  if (name == "auto") return ZeroMode::kAuto;
  if (name == "write") return ZeroMode::kWrite;
  return InvalidArgument(fmt::format("unknown zero mode '{}' (auto, write)", name));
}

ImageWriter::ImageWriter() : impl_(std::make_unique<Impl>()) {}
ImageWriter::~ImageWriter() { impl_->DrainAll(); }

Result<std::unique_ptr<ImageWriter>> ImageWriter::Create(std::vector<Device> devices,
                                                         const WriterOptions& options) {
  if (devices.empty()) return InvalidArgument("no target device");
  for (auto& d : devices) {
    if (d.queue == nullptr) return InvalidArgument(d.name + ": no I/O queue");
    if (d.window_offset > d.geometry.size) return NoSpace(d.name + ": window starts beyond the end");
    if (d.window_size == 0) d.window_size = d.geometry.size - d.window_offset;
  }
  FP_ASSIGN_OR_RETURN(uint64_t align, CommonAlignment(devices));
  auto w = std::unique_ptr<ImageWriter>(new ImageWriter());
  Impl& m = *w->impl_;
  m.options = options;
  m.align = align;
  uint64_t rs = options.request_size ? options.request_size : DefaultRequestSize(devices[0].geometry);
  m.request_size = AlignUp(std::max(rs, align), align);
  uint64_t mem_align = 4096;
  for (const auto& d : devices) mem_align = std::max<uint64_t>(mem_align, d.geometry.mem_align);
  // Enough buffers to keep every queue full while two more are prepared.
  unsigned depth = options.queue_depth;
  for (const auto& d : devices) depth = std::max(depth, std::min(d.queue->depth(), 64u));
  for (unsigned i = 0; i < depth + 2; ++i) m.pool.emplace_back(m.request_size, mem_align);
  m.pool_refs.assign(m.pool.size(), 0);
  for (auto& p : m.patterns) p.mem = AlignedBuffer(m.request_size, mem_align);
  m.pattern_base = static_cast<int>(m.pool.size());
  uint64_t min_limit = UINT64_MAX;
  for (auto& dev : devices) {
    DevState d;
    d.dev = dev;
    d.extendable = Extendable(dev);
    d.limit = d.extendable ? AlignUp(dev.window_size, align) : dev.window_size;
    min_limit = std::min(min_limit, d.limit);
    d.digests = DigestMap(align);
    for (int i = 0; i < 2; ++i) d.scratch.emplace_back(align, mem_align);
    d.scratch_busy.assign(2, false);
    d.scratch_base = m.pattern_base + 2;
    m.devs.push_back(std::move(d));
  }
  if (options.first_block_last) {
    m.hold_len = std::min(AlignUp(kMiB, align), AlignDown(min_limit, align));
    for (auto& d : m.devs) d.hold = AlignedBuffer(m.hold_len, mem_align);
  }
  for (auto& d : m.devs) {
    std::vector<std::span<uint8_t>> bufs;
    for (auto& b : m.pool) bufs.push_back(b.span());
    for (auto& p : m.patterns) bufs.push_back(p.mem.span());
    for (auto& s : d.scratch) bufs.push_back(s.span());
    (void)d.dev.queue->RegisterBuffers(bufs);  // optional: plain buffers otherwise
  }
  return w;
}

Status ImageWriter::Impl::CheckEvent(uint64_t offset, uint64_t length) const {
  if (!failed.ok()) return failed;
  if (finished) return InvalidArgument("writer: event after Finish()");
  for (const auto& d : devs)
    if (offset > d.dev.window_size || length > d.dev.window_size - offset)
      return NoSpace(fmt::format("image range 0x{:x}+{} goes beyond the end of {} (size {})", offset,
                                 length, d.dev.name, d.dev.window_size));
  return Status::Ok();
}

Status ImageWriter::Impl::PutData(uint64_t offset, uint64_t length, const FillFn& fill) {
  while (length > 0) {
    if (cur < 0 || offset != cur_end || cur_end == cur_base + request_size) {
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
  if (fb < fe) {
    std::vector<uint32_t> crcs;
    if (options.verify) crcs = devs[0].digests.BlockCrcs({base + fb, fe - fb});
    for (auto& d : devs) {
      if (options.verify) d.digests.PutBlocks(fb, crcs);
      FP_RETURN_IF_ERROR(Issue(d, OpKind::kWrite, fb, fe - fb, base + fb, {BufRef::kPool, buf}));
    }
  }
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
  Status s = failed.ok() ? FlushStaging() : failed;
  if (!s.ok() && failed.ok()) failed = s;
  finished = true;
  DrainAll();
  if (!failed.ok()) return failed;
  if (hold_len > 0) {
    for (auto& d : devs) {
      if (Status st = d.dev.queue->Sync(); !st.ok()) return failed = st.WithContext(d.dev.name);
    }
    FP_RETURN_IF_ERROR(WriteHolds());
  }
  FP_RETURN_IF_ERROR(TrimFiles());
  for (auto& d : devs) {
    Status st = d.dev.queue->Sync();
    if (!st.ok() && failed.ok()) failed = st.WithContext(d.dev.name);
  }
  if (!failed.ok()) return failed;
  stats.image_size = std::max(stats.image_size, progress_done);
  if (options.progress) options.progress(progress_done, stats.image_size);
  if (options.verify) {
    for (auto& d : devs) FP_RETURN_IF_ERROR(Verify(d));
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
  return impl_->PutData(offset, data.size(), [&](uint8_t* dst, uint64_t n, uint64_t at) {
    std::memcpy(dst, data.data() + (at - offset), n);
    return Status::Ok();
  });
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
    uint64_t src = in_offset + (at - out_offset);
    for (uint64_t done = 0; done < len;) {
      ssize_t r = pread(fd, dst + done, len - done, static_cast<off_t>(src + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ErrnoError(fmt::format("source read at input byte 0x{:x}", src + done));
      if (r == 0) return Corrupt(fmt::format("source ends at input byte 0x{:x} (expected {} more bytes)",
                                             src + done, len - done));
      done += static_cast<uint64_t>(r);
    }
    crc = Crc32Update(crc, dst, len);
    return Status::Ok();
  }));
  return crc;
}

Status ImageWriter::Finish() { return impl_->Finish(); }
const WriteStats& ImageWriter::stats() const { return impl_->stats; }

}  // namespace flashpipe::io
