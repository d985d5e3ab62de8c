#include "io/image_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "base/aligned_buffer.h"
#include "io/image_writer.h"
#include "io/queues.h"

namespace flashpipe::io {
namespace {

uint64_t AlignDown(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// One piece, in offset order: a read in flight (or done), or a hole.
struct Entry {
  uint64_t seq = 0;
  uint64_t offset = 0, length = 0;  // handed out
  uint64_t read_length = 0;         // read (aligned up); 0 for a hole
  int buf = -1;
  bool hole = false;
  bool done = false;
  Status status;
};

}  // namespace

struct ImageReader::Impl {
  const Target* target = nullptr;
  IoQueue* queue = nullptr;
  uint64_t end = 0;          // of the range, window offsets
  uint64_t align = 1;        // request offsets and lengths (O_DIRECT: logical block)
  uint64_t request_size = 0;
  bool find_holes = false;
  bool registered = false;
  std::vector<AlignedBuffer> pool;
  std::vector<int> free_bufs;
  std::deque<Entry> pending;
  uint64_t next_seq = 0;
  uint64_t planned = 0;      // next offset to plan
  uint64_t data_end = 0;     // [planned, data_end) is known to be data (find_holes)
  int held = -1;             // buffer of the piece handed out last
  uint64_t bytes_read = 0, hole_bytes = 0;
  Status failed;

  uint64_t Abs(uint64_t offset) const { return target->window_offset() + offset; }
  size_t MaxPending() const { return pool.size() * 4; }

  Result<bool> PlanOne();
  Status FindData();
  Result<bool> SubmitRead();
  Status WaitFront();
  Status Narrow(const Entry& e) const;
  Status CheckFileEnd() const;
  Result<ReadPiece> Next();
};

// Where the data at `planned` ends, or a hole entry when there is none there.
Status ImageReader::Impl::FindData() {
  const int fd = target->fd();
  off_t d = ::lseek(fd, static_cast<off_t>(Abs(planned)), SEEK_DATA);
  if (d < 0 && errno != ENXIO) {  // no SEEK_DATA here: all of it is data
    data_end = end;
    return Status::Ok();
  }
  uint64_t data = d < 0 ? UINT64_MAX : static_cast<uint64_t>(d) - target->window_offset();
  uint64_t hole_end = std::min(end, AlignDown(data, align));
  if (hole_end > planned) {
    pending.push_back({next_seq++, planned, hole_end - planned, 0, -1, true, true, {}});
    planned = hole_end;
    return Status::Ok();
  }
  off_t h = ::lseek(fd, static_cast<off_t>(Abs(std::max(planned, data))), SEEK_HOLE);
  if (h < 0) return ErrnoError(fmt::format("lseek(SEEK_HOLE) {} at byte 0x{:x}", target->path(), Abs(planned)));
  uint64_t hole = static_cast<uint64_t>(h) - target->window_offset();
  data_end = std::min(end, std::max(AlignUp(hole, align), planned + align));
  return Status::Ok();
}

Result<bool> ImageReader::Impl::SubmitRead() {
  if (free_bufs.empty() || queue->in_flight() >= queue->depth()) return false;
  uint64_t limit = find_holes ? data_end : end;
  uint64_t length = std::min(request_size, limit - planned);
  uint64_t read_length = AlignUp(length, align);
  FP_RETURN_IF_ERROR(target->CheckRange(planned, length));
  int b = free_bufs.back();
  IoOp op{OpKind::kRead, Abs(planned), read_length, pool[b].data(), registered ? b : -1, next_seq};
  FP_RETURN_IF_ERROR(queue->Submit(op));
  free_bufs.pop_back();
  pending.push_back({next_seq++, planned, length, read_length, b, false, false, {}});
  planned += length;
  return true;
}

// Adds one entry to the pipeline; false when nothing can be added now.
Result<bool> ImageReader::Impl::PlanOne() {
  if (planned >= end || pending.size() >= MaxPending()) return false;
  if (find_holes && planned >= data_end) {
    size_t before = pending.size();
    FP_RETURN_IF_ERROR(FindData());
    if (pending.size() > before) return true;
  }
  return SubmitRead();
}

Status ImageReader::Impl::WaitFront() {
  while (!pending.front().done) {
    FP_ASSIGN_OR_RETURN(IoCompletion c, queue->Wait());
    uint64_t index = c.tag - pending.front().seq;
    if (index >= pending.size()) return Internal(fmt::format("reader: completion for unknown request {}", c.tag));
    pending[index].done = true;
    pending[index].status = std::move(c.status);
  }
  return Status::Ok();
}

// The first logical block of a failed request that cannot be read, found by
// reading them one at a time; the request's own error when all of them read.
Status ImageReader::Impl::Narrow(const Entry& e) const {
  const uint64_t block = std::max<uint64_t>(align, 512);
  AlignedBuffer one(block, std::max<size_t>(4096, target->geometry().mem_align));
  for (uint64_t off = e.offset; off < e.offset + e.read_length; off += block) {
    IoOp op{OpKind::kRead, Abs(off), block, one.data(), -1, 0};
    Status s = RunOpBlocking(target->fd(), op);
    if (!s.ok()) {
      return Status(s.code(),
                    fmt::format("cannot read {}: the {}-byte block at byte 0x{:x} (0x{:x} into the range read) "
                                "is unreadable", target->path(), block, Abs(off), off),
                    s.sys_errno());
    }
  }
  return e.status.WithContext(fmt::format("read {}", target->path()));
}

Status ImageReader::Impl::CheckFileEnd() const {
  if (target->geometry().block_device) return Status::Ok();
  struct stat st;
  if (::fstat(target->fd(), &st) != 0) return ErrnoError(fmt::format("stat {}", target->path()));
  if (static_cast<uint64_t>(st.st_size) < Abs(end)) {
    return IoError(fmt::format("{} shrank while it was read: it now ends at byte {}, the range read ends at {}",
                               target->path(), st.st_size, Abs(end)), 0);
  }
  return Status::Ok();
}

Result<ReadPiece> ImageReader::Impl::Next() {
  if (held >= 0) free_bufs.push_back(std::exchange(held, -1));
  for (;;) {
    FP_ASSIGN_OR_RETURN(bool added, PlanOne());
    if (!added) break;
  }
  if (pending.empty()) {
    FP_RETURN_IF_ERROR(CheckFileEnd());
    return ReadPiece{end, 0, false, {}};
  }
  FP_RETURN_IF_ERROR(WaitFront());
  Entry e = std::move(pending.front());
  pending.pop_front();
  if (e.hole) {
    hole_bytes += e.length;
    return ReadPiece{e.offset, e.length, true, {}};
  }
  held = e.buf;
  if (!e.status.ok()) return Narrow(e);
  bytes_read += e.length;
  return ReadPiece{e.offset, e.length, false, {pool[e.buf].data(), e.length}};
}

ImageReader::ImageReader() : impl_(std::make_unique<Impl>()) {}

ImageReader::~ImageReader() {
  while (impl_->queue != nullptr && impl_->queue->in_flight() > 0) {
    if (!impl_->queue->Wait().ok()) break;
  }
}

Result<std::unique_ptr<ImageReader>> ImageReader::Create(const Target& target, IoQueue* queue, uint64_t offset,
                                                         uint64_t length, const ReaderOptions& options) {
  const Geometry& g = target.geometry();
  FP_RETURN_IF_ERROR(target.CheckRange(offset, length));
  uint64_t align = g.direct ? std::max<uint64_t>(g.logical_block, 512) : 1;
  if ((target.window_offset() + offset) % align != 0) {
    return InvalidArgument(fmt::format("{}: reading from byte 0x{:x} with O_DIRECT needs a multiple of the "
                                       "{}-byte logical block", target.path(), target.window_offset() + offset, align));
  }
  auto r = std::unique_ptr<ImageReader>(new ImageReader());
  Impl& m = *r->impl_;
  m.target = &target;
  m.queue = queue;
  m.planned = offset;
  m.end = offset + length;
  m.align = align;
  m.request_size = AlignUp(options.request_size ? options.request_size : DefaultRequestSize(g),
                           std::max<uint64_t>(align, 4096));
  m.find_holes = options.skip_holes && !g.block_device;
  size_t mem_align = std::max<size_t>(4096, g.mem_align);
  for (unsigned i = 0; i < queue->depth() + 1; ++i) {
    m.pool.emplace_back(m.request_size, mem_align);
    m.free_bufs.push_back(static_cast<int>(i));
  }
  std::vector<std::span<uint8_t>> spans;
  for (auto& b : m.pool) spans.push_back(b.span());
  m.registered = queue->RegisterBuffers(spans);
  return r;
}

Result<ReadPiece> ImageReader::Next() {
  if (!impl_->failed.ok()) return impl_->failed;
  auto piece = impl_->Next();
  if (!piece.ok()) impl_->failed = piece.status();
  return piece;
}

uint64_t ImageReader::request_size() const { return impl_->request_size; }
uint64_t ImageReader::bytes_read() const { return impl_->bytes_read; }
uint64_t ImageReader::hole_bytes() const { return impl_->hole_bytes; }

}  // namespace flashpipe::io
