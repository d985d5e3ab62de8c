// ImageWriter, device side: issuing ops in order, completions, buffers,
// read-modify-write of partial blocks and the held-back first block.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "io/writer_impl.h"

namespace flashpipe::io {

uint8_t* ImageWriter::Impl::BufData(DevState& d, BufRef ref) {
  switch (ref.kind) {
    case BufRef::kPool: return pool[ref.index].data();
    case BufRef::kPattern: return patterns[ref.index].mem.data();
    case BufRef::kScratch: return d.scratch[ref.index].data();
    case BufRef::kNone: break;
  }
  return nullptr;
}

int ImageWriter::Impl::BufIndex(DevState& d, BufRef ref) const {
  switch (ref.kind) {
    case BufRef::kPool: return ref.index;
    case BufRef::kPattern: return pattern_base + ref.index;
    case BufRef::kScratch: return d.scratch_base + ref.index;
    case BufRef::kNone: break;
  }
  return -1;
}

void ImageWriter::Impl::Release(BufRef ref, DevState& d) {
  switch (ref.kind) {
    case BufRef::kPool: --pool_refs[ref.index]; break;
    case BufRef::kPattern: --patterns[ref.index].refs; break;
    case BufRef::kScratch: d.scratch_busy[ref.index] = false; break;
    case BufRef::kNone: break;
  }
}

Status ImageWriter::Impl::Fail(const DevState& d, Status s) {
  if (failed.ok()) {
    failed = std::move(s);
    failed_device = static_cast<int>(&d - devs.data());
  }
  return failed;
}

// Submits one op on one device after every earlier op that overlaps it has
// completed: the queue completes in any order, and two writes to one range in
// flight at once would leave either on the medium.
Status ImageWriter::Impl::Issue(DevState& d, OpKind kind, uint64_t begin, uint64_t length,
                                uint8_t* buf, BufRef ref) {
  if (!failed.ok()) return failed;
  if (kind == OpKind::kWrite) d.written_end = std::max(d.written_end, begin + length);
  if (hold_len > 0 && begin < hold_len && kind != OpKind::kRead) {
    uint64_t cut = std::min(begin + length, hold_len);
    FP_RETURN_IF_ERROR(LoadHold(d));
    ApplyToHold(d, kind, begin, cut - begin, buf);
    if (buf != nullptr) buf += cut - begin;
    length -= cut - begin;
    begin = cut;
    if (length == 0) {
      if (ref.kind == BufRef::kScratch) Release(ref, d);
      return Status::Ok();
    }
  }
  if (begin > d.limit || length > d.limit - begin) {
    return Fail(d, NoSpace(fmt::format("{}: request at image offset 0x{:x}+{} is outside the window (size {})",
                                       d.dev.name, begin, length, d.dev.window_size)));
  }
  IoQueue* q = d.dev.queue;
  auto overlaps = [&] {
    return std::any_of(d.inflight.begin(), d.inflight.end(), [&](const InflightOp& o) {
      return o.begin < begin + length && begin < o.end;
    });
  };
  while (overlaps()) FP_RETURN_IF_ERROR(WaitDevice(d));
  first_tag = next_tag;
  if (kind != OpKind::kRead) stats.changed_end = std::max(stats.changed_end, begin + length);
  // One op per extent the range touches (a plain window has one extent).
  Status s = d.map.Split(begin, length, [&](uint64_t device_offset, uint64_t at, uint64_t n) {
    while (q->in_flight() >= q->depth()) FP_RETURN_IF_ERROR(WaitDevice(d));
    IoOp op{kind, device_offset, n, buf == nullptr ? nullptr : buf + at, BufIndex(d, ref), next_tag++};
    last_tag = op.tag;
    if (Status st = q->Submit(op); !st.ok()) return st.WithContext(fmt::format("{}: image offset 0x{:x}", d.dev.name, begin + at));
    d.inflight.push_back({op.tag, begin + at, begin + at + n, kind, ref});
    if (ref.kind == BufRef::kPool) ++pool_refs[ref.index];
    if (ref.kind == BufRef::kPattern) ++patterns[ref.index].refs;
    if (&d == &devs[0] && kind != OpKind::kRead) ++stats.requests;
    return Status::Ok();
  });
  if (!s.ok()) return Fail(d, s);
  if (kind == OpKind::kWrite && begin + length > d.dev.window_size) d.extended = true;
  if (&d == &devs[0] && kind == OpKind::kWrite) stats.bytes_written += length;
  return Status::Ok();
}

// Takes one completion from d's queue; the first failure sticks.
Status ImageWriter::Impl::WaitDevice(DevState& d) {
  auto c = d.dev.queue->Wait();
  if (!c.ok()) {
    d.inflight.clear();  // the queue is broken: nothing more will complete
    d.broken = true;     // ...that we know of: its buffers never go back to a stock
    return Fail(d, c.status().WithContext(d.dev.name));
  }
  auto it = std::find_if(d.inflight.begin(), d.inflight.end(),
                         [&](const InflightOp& o) { return o.tag == c->tag; });
  if (it == d.inflight.end()) {
    return Fail(d, Internal(fmt::format("{}: completion for unknown tag {}", d.dev.name, c->tag)));
  }
  if (!c->status.ok()) (void)Fail(d, c->status.WithContext(fmt::format("{}: image offset 0x{:x}", d.dev.name, it->begin)));
  Release(it->buf, d);
  d.inflight.erase(it);
  return failed;
}

// Waits on the device whose oldest op is the oldest overall.
Status ImageWriter::Impl::WaitAny() {
  DevState* oldest = nullptr;
  for (auto& d : devs)
    if (!d.inflight.empty() && (!oldest || d.inflight.front().tag < oldest->inflight.front().tag))
      oldest = &d;
  if (oldest == nullptr) return Internal("writer: waiting with nothing in flight");
  return WaitDevice(*oldest);
}

void ImageWriter::Impl::DrainAll() {
  for (auto& d : devs)
    while (!d.inflight.empty()) (void)WaitDevice(d);
}

Status ImageWriter::Impl::WaitTags(DevState& d, uint64_t first, uint64_t last) {
  auto pending = [&] {
    return std::any_of(d.inflight.begin(), d.inflight.end(),
                       [&](const InflightOp& o) { return o.tag >= first && o.tag <= last; });
  };
  while (pending()) FP_RETURN_IF_ERROR(WaitDevice(d));
  return failed;
}

Result<int> ImageWriter::Impl::AcquirePool() {
  for (;;) {
    for (size_t i = 0; i < pool.size(); ++i) {
      if (pool_refs[i] == 0 && static_cast<int>(i) != cur) {
        pool_refs[i] = 1;  // the builder's reference
        return static_cast<int>(i);
      }
    }
    FP_RETURN_IF_ERROR(WaitAny());
  }
}

// A buffer of request_size bytes of `pattern`, filled once and shared by every
// request of every fill with that pattern.
Result<int> ImageWriter::Impl::AcquirePattern(uint32_t pattern) {
  for (;;) {
    for (int i = 0; i < 2; ++i)
      if (patterns[i].valid && patterns[i].pattern == pattern) return i;
    for (int i = 0; i < 2; ++i) {
      PatternBuf& p = patterns[i];
      if (p.refs > 0) continue;
      uint8_t bytes[4];
      std::memcpy(bytes, &pattern, 4);  // little-endian hosts only (x86, arm64)
      for (size_t k = 0; k < p.mem.size(); k += 4) std::memcpy(p.mem.data() + k, bytes, 4);
      p.pattern = pattern;
      p.valid = true;
      return i;
    }
    FP_RETURN_IF_ERROR(WaitAny());
  }
}

Result<int> ImageWriter::Impl::AcquireScratch(DevState& d) {
  for (;;) {
    for (size_t i = 0; i < d.scratch.size(); ++i) {
      if (!d.scratch_busy[i]) {
        d.scratch_busy[i] = true;
        return static_cast<int>(i);
      }
    }
    FP_RETURN_IF_ERROR(WaitDevice(d));
  }
}

// The current content of one block, through the same O_DIRECT queue (after
// any write to it in flight), from the held-back copy, or zeros when the
// device is known to read back zeros there.
Status ImageWriter::Impl::ReadBlock(DevState& d, uint64_t begin, uint8_t* dst) {
  if (hold_len > 0 && begin < hold_len) {
    FP_RETURN_IF_ERROR(LoadHold(d));
    std::memcpy(dst, d.hold.data() + begin, align);
    return Status::Ok();
  }
  if (d.dev.reads_zero && d.written_end <= begin) {
    std::memset(dst, 0, align);
    return Status::Ok();
  }
  FP_RETURN_IF_ERROR(Issue(d, OpKind::kRead, begin, align, dst, {BufRef::kNone, -1}));
  return WaitTags(d, first_tag, last_tag);
}

// Writes [lo, hi) of `block` (lo..hi inside one block) keeping the rest of the
// block as it is on each device.
Status ImageWriter::Impl::ReadModifyWrite(uint64_t block, uint64_t lo, uint64_t hi, const uint8_t* src) {
  for (auto& d : devs) {
    FP_ASSIGN_OR_RETURN(int s, AcquireScratch(d));
    uint8_t* buf = d.scratch[s].data();
    if (Status st = ReadBlock(d, block, buf); !st.ok()) {
      d.scratch_busy[s] = false;
      return st;
    }
    std::memcpy(buf + (lo - block), src, hi - lo);
    if (options.verify) d.digests.PutBlocks(block, d.digests.BlockCrcs({buf, align}));
    FP_RETURN_IF_ERROR(Issue(d, OpKind::kWrite, block, align, buf, {BufRef::kScratch, s}));
  }
  return Status::Ok();
}

Status ImageWriter::Impl::LoadHold(DevState& d) {
  if (d.hold_loaded) return Status::Ok();
  d.hold_loaded = true;
  if (d.dev.reads_zero) return Status::Ok();  // AlignedBuffer starts zeroed
  uint64_t keep = hold_len;
  hold_len = 0;  // the read below must reach the device
  Status s = Issue(d, OpKind::kRead, 0, keep, d.hold.data(), {BufRef::kNone, -1});
  if (s.ok()) s = WaitTags(d, first_tag, last_tag);
  hold_len = keep;
  return s;
}

void ImageWriter::Impl::ApplyToHold(DevState& d, OpKind kind, uint64_t begin, uint64_t length,
                                    const uint8_t* buf) {
  if (kind == OpKind::kDiscard) return;  // undefined content: keeping the old is fine
  if (kind == OpKind::kWrite) std::memcpy(d.hold.data() + begin, buf, length);
  else std::memset(d.hold.data() + begin, 0, length);
  d.hold_touched = std::max(d.hold_touched, begin + length);
}

// first_block_last: everything else is written and synced; now the first MiB.
Status ImageWriter::Impl::WriteHolds() {
  uint64_t keep = hold_len;
  hold_len = 0;
  for (auto& d : devs) {
    if (d.hold_touched == 0) continue;
    uint64_t len = std::min((d.hold_touched + align - 1) / align * align, keep);
    if (options.verify) d.digests.PutBlocks(0, d.digests.BlockCrcs({d.hold.data(), len}));
    FP_RETURN_IF_ERROR(Issue(d, OpKind::kWrite, 0, len, d.hold.data(), {BufRef::kNone, -1}));
  }
  DrainAll();
  return failed;
}

// A regular file whose last block was written whole gets its size back.
Status ImageWriter::Impl::TrimFiles() {
  for (auto& d : devs) {
    if (!d.extended || d.dev.file_fd < 0) continue;
    if (ftruncate(d.dev.file_fd, static_cast<off_t>(d.dev.geometry.size)) != 0)
      (void)Fail(d, ErrnoError(fmt::format("{}: cannot trim the file back to {} bytes", d.dev.name, d.dev.geometry.size)));
    d.extended = false;
  }
  return failed;
}

}  // namespace flashpipe::io
