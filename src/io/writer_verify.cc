// ImageWriter, verify: read every extent of the final content back with
// O_DIRECT through the device's queue, up to queue-depth reads in flight, and
// compare block CRCs with the digests taken while writing, in offset order so
// the first bad offset is the one reported.
#include <deque>

#include "base/crc32.h"
#include "io/writer_impl.h"

namespace flashpipe::io {
namespace {

struct Chunk {
  uint64_t begin = 0, end = 0;
  const DigestMap::Extent* extent = nullptr;
  uint64_t extent_begin = 0;
};

}  // namespace

uint64_t ImageWriter::Impl::VerifyBytes() const {
  uint64_t total = 0;
  for (const auto& d : devs)
    for (const auto& [begin, extent] : d.digests.extents()) total += extent.end - begin;
  return total;
}

Status ImageWriter::Impl::Verify(DevState& d, uint64_t* done, uint64_t total) {
  const uint64_t bs = d.digests.block();
  auto ext = d.digests.extents().begin();
  uint64_t at = ext == d.digests.extents().end() ? 0 : ext->first;
  auto next_chunk = [&](Chunk* c) {
    if (ext == d.digests.extents().end()) return false;
    uint64_t end = std::min(ext->second.end, at + request_size);
    *c = {at, end, &ext->second, ext->first};
    at = end;
    if (at == ext->second.end && ++ext != d.digests.extents().end()) at = ext->first;
    return true;
  };
  struct Pending {
    Chunk chunk;
    int buf;
    uint64_t first_tag, last_tag;
  };
  std::deque<Pending> pending;
  unsigned depth = std::min<unsigned>(d.dev.queue->depth(), static_cast<unsigned>(pool.size()));
  Status result;
  for (;;) {
    Chunk c;
    if (Status st = CheckCancel(options.cancel); !st.ok()) {
      for (auto& q : pending) --pool_refs[q.buf];
      DrainAll();
      return st;
    }
    while (pending.size() < depth && next_chunk(&c)) {
      FP_ASSIGN_OR_RETURN(int b, AcquirePool());
      Status s = Issue(d, OpKind::kRead, c.begin, c.end - c.begin, pool[b].data(), {BufRef::kPool, b});
      if (!s.ok()) {
        --pool_refs[b];
        DrainAll();
        return s;
      }
      pending.push_back({c, b, first_tag, last_tag});
    }
    if (pending.empty()) return Status::Ok();
    Pending p = pending.front();
    pending.pop_front();
    Status s = WaitTags(d, p.first_tag, p.last_tag);
    const DigestMap::Extent& e = *p.chunk.extent;
    uint32_t pattern_crc = e.is_pattern ? Crc32AppendPattern(0, e.pattern, bs / 4) : 0;
    for (uint64_t off = p.chunk.begin; s.ok() && off < p.chunk.end; off += bs) {
      uint32_t got = Crc32Update(0, pool[p.buf].data() + (off - p.chunk.begin), bs);
      uint32_t want = e.is_pattern ? pattern_crc : e.crcs[(off - p.chunk.extent_begin) / bs];
      if (got != want)
        s = Mismatch(fmt::format("verify: {} differs from the image in the {}-byte block at image offset 0x{:x} "
                                "(device offset 0x{:x})", d.dev.name, bs, off, d.map.DeviceOffset(off)));
    }
    --pool_refs[p.buf];
    if (!s.ok()) {
      for (auto& q : pending) --pool_refs[q.buf];
      DrainAll();
      return s;
    }
    *done += p.chunk.end - p.chunk.begin;
    Phase(WritePhase::kVerify, *done, total);
  }
}

}  // namespace flashpipe::io
