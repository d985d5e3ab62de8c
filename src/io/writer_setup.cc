// ImageWriter, setup: the common alignment of all devices, the request
// size, the buffer pool and its registration with each queue.
#include <algorithm>

#include "io/writer_impl.h"

namespace flashpipe::io {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kMaxRequest = 4 * kMiB;  // bounds the pool at (depth + 2) x 4 MiB

uint64_t AlignDown(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The file's end is the window's end, so its last block may be written whole.
bool Extendable(const Device& d) {
  return d.file_fd >= 0 && !d.geometry.block_device && d.extents.empty() &&
         d.window_offset + d.window_size == d.geometry.size;
}

// Where each range of the window starts and ends (one range, or the extents).
bool WindowOn(const Device& d, uint64_t x) {
  if (d.extents.empty()) return d.window_offset % x == 0 && (d.window_size % x == 0 || Extendable(d));
  return std::all_of(d.extents.begin(), d.extents.end(),
                     [&](const DeviceExtent& e) { return e.device_offset % x == 0 && e.length % x == 0; });
}

// The largest power of two <= every device's preferred alignment at which
// every window starts (and ends, unless the file can be trimmed afterwards).
Result<uint64_t> CommonAlignment(const std::vector<Device>& devices) {
  uint64_t a = 512;
  for (const auto& d : devices) a = std::max<uint64_t>(a, d.geometry.offset_align);
  auto fits = [&](uint64_t x) {
    return std::all_of(devices.begin(), devices.end(), [&](const Device& d) { return WindowOn(d, x); });
  };
  while (a > 512 && !fits(a)) a /= 2;
  for (const auto& d : devices)
    if (a < d.geometry.logical_block || !WindowOn(d, a))
      return InvalidArgument(fmt::format("{}: window 0x{:x}+{} is not aligned to the {}-byte block",
                                         d.name, d.window_offset, d.window_size, d.geometry.logical_block));
  return a;
}

}  // namespace

uint64_t DefaultRequestSize(const Geometry& g) {
  uint64_t rs = g.optimal_io ? g.optimal_io : g.max_request;
  return std::clamp<uint64_t>(rs, kMiB, kMaxRequest);
}

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

uint64_t WindowSize(const Device& device) {
  if (!device.extents.empty()) {
    uint64_t total = 0;
    for (const auto& e : device.extents) total += e.length;
    return total;
  }
  uint64_t start = std::min(device.window_offset, device.geometry.size);
  return device.window_size != 0 ? device.window_size : device.geometry.size - start;
}

Status CheckInWindow(const Device& device, uint64_t offset, uint64_t length) {
  const uint64_t window = WindowSize(device);
  if (offset > window || length > window - offset) {
    return NoSpace(fmt::format("{}: write at image offset 0x{:x}+{} is outside the window ({} bytes)",
                               device.name, offset, length, window));
  }
  return Status::Ok();
}

Status CheckRequestSize(uint64_t bytes) {
  if (bytes < 4096 || bytes > 64 * kMiB || bytes % 4096 != 0) {
    return InvalidArgument(fmt::format("request size {} must be a multiple of 4096 from 4K to 64M", bytes));
  }
  return Status::Ok();
}

Result<ZeroMode> ParseZeroMode(std::string_view name) {
  if (name == "auto") return ZeroMode::kAuto;
  if (name == "write") return ZeroMode::kWrite;
  return InvalidArgument(fmt::format("unknown zero mode '{}' (auto, write)", name));
}

AlignedBuffer ImageWriter::Impl::NewBuffer(size_t size) const {
  return options.stock ? options.stock->Take(size, mem_align) : AlignedBuffer(size, mem_align);
}

// After the last completion: the buffers go back to the stock.
void ImageWriter::Impl::ReturnBuffers() {
  if (options.stock == nullptr) return;
  for (const auto& d : devs)
    if (!d.inflight.empty() || d.broken) return;  // never stock a buffer that may be in use
  for (auto& b : pool) options.stock->Give(std::move(b), mem_align);
  for (auto& p : patterns) options.stock->Give(std::move(p.mem), mem_align);
  for (auto& d : devs)
    for (auto& b : d.scratch) options.stock->Give(std::move(b), mem_align);
}

Result<std::unique_ptr<ImageWriter>> ImageWriter::Create(std::vector<Device> devices,
                                                         const WriterOptions& options) {
  if (devices.empty()) return InvalidArgument("no target device");
  std::vector<ExtentMap> maps;
  for (auto& d : devices) {
    if (d.queue == nullptr) return InvalidArgument(d.name + ": no I/O queue");
    if (!d.extents.empty()) {
      if (d.window_offset != 0 || d.window_size != 0) {
        return InvalidArgument(d.name + ": a window is either extents or an offset and size, not both");
      }
      FP_ASSIGN_OR_RETURN(ExtentMap map, ExtentMap::Create(d.name, d.extents, d.geometry.size, d.geometry.logical_block));
      d.window_size = map.size();
      maps.push_back(std::move(map));
      continue;
    }
    if (d.window_offset > d.geometry.size) return NoSpace(d.name + ": window starts beyond the end");
    if (d.window_size == 0) d.window_size = d.geometry.size - d.window_offset;
    maps.emplace_back();
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
  m.mem_align = mem_align;
  for (unsigned i = 0; i < depth + 2; ++i) m.pool.push_back(m.NewBuffer(m.request_size));
  m.pool_refs.assign(m.pool.size(), 0);
  for (auto& p : m.patterns) p.mem = m.NewBuffer(m.request_size);
  m.pattern_base = static_cast<int>(m.pool.size());
  uint64_t min_limit = UINT64_MAX;
  for (size_t i = 0; i < devices.size(); ++i) {
    const Device& dev = devices[i];
    DevState d;
    d.dev = dev;
    d.extendable = Extendable(dev);
    d.limit = d.extendable ? AlignUp(dev.window_size, align) : dev.window_size;
    d.map = dev.extents.empty() ? ExtentMap::Single(dev.window_offset, d.limit) : std::move(maps[i]);
    min_limit = std::min(min_limit, d.limit);
    d.digests = DigestMap(align);
    for (int i = 0; i < 2; ++i) d.scratch.push_back(m.NewBuffer(align));
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

}  // namespace flashpipe::io
