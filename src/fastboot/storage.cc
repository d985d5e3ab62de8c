#include "fastboot/storage.h"

#include <blkid/blkid.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/aligned_buffer.h"
#include "base/fd_io.h"
#include "base/log.h"
#include "base/units.h"
#include "base/unique_fd.h"
#include "fastboot/dynamic_partitions.h"
#include "io/gpt.h"
#include "io/image_writer.h"
#include "io/write_model.h"
#include "sparse/decoder.h"

namespace flashpipe::fastboot {

struct Storage::Backing {
  std::string path;                     // empty for ForQueue
  std::unique_ptr<io::Target> target;   // null for ForQueue
  std::unique_ptr<io::IoQueue> owned_queue;
  io::IoQueue* queue = nullptr;
  io::Geometry geometry;
};

namespace {

// A validated sparse image, re-decoded from the download buffer.
Status DecodePieces(std::span<const std::span<const uint8_t>> pieces, sparse::Sink& sink) {
  sparse::Decoder decoder(&sink, {.check_crc = false, .tolerate_missing_tail = true});
  for (auto piece : pieces) FP_RETURN_IF_ERROR(decoder.Feed(piece));
  return decoder.Finish();
}

// A raw image: its bytes from image offset 0.
Status FeedRawPieces(std::span<const std::span<const uint8_t>> pieces, sparse::Sink& sink) {
  uint64_t at = 0;
  for (auto piece : pieces) {
    FP_RETURN_IF_ERROR(sink.OnRaw(at, piece));
    at += piece.size();
  }
  return sink.OnEnd();
}

// Runs one op to completion on the queue.
Status RunOp(io::IoQueue* queue, const io::IoOp& op) {
  FP_RETURN_IF_ERROR(queue->Submit(op));
  FP_ASSIGN_OR_RETURN(io::IoCompletion c, queue->Wait());
  return c.status;
}

// A range on a block device is whole logical blocks (smaller writes fail or
// read-modify-write neighbours); on a file, whole 512-byte sectors, as a disk
// image has them.
Status CheckAligned(const PartitionSpec& spec, const io::Geometry& g) {
  uint32_t block = g.block_device ? g.logical_block : 512;
  if (spec.offset % block == 0 && spec.size % block == 0) return Status::Ok();
  return InvalidArgument(fmt::format(
      "partition '{}': offset {} and size {} must be multiples of the {} of {} ({} bytes)", spec.name, spec.offset,
      spec.size, g.block_device ? "logical block size" : "sector size", spec.path, block));
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 36) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c > 0x20 && c < 0x7f && c != ':' && c != '=';
  });
}

}  // namespace

// A logical partition's window is its extents, even none (which the writer
// refuses): never the range [offset, +size).
io::Device Storage::DeviceOf(const Backing& b, const Partition& p) {
  io::Device dev{p.name, b.queue, b.geometry, p.offset, p.size};
  if (p.logical) {
    dev.window_offset = 0;
    dev.window_size = 0;
    dev.extents = p.extents;
  }
  if (b.target != nullptr && !b.geometry.block_device) dev.file_fd = b.target->fd();
  return dev;
}

namespace {

// A logical partition with ZERO extents has bytes that store nothing.
Status CheckWritable(const Partition& p) {
  if (!p.logical) return Status::Ok();
  uint64_t stored = 0;
  for (const auto& e : p.extents) stored += e.length;
  if (p.size == 0) return NoSpace(fmt::format("logical partition '{}' has no space (resize it first)", p.name));
  if (stored != p.size) {
    return Unsupported(fmt::format("logical partition '{}' has ZERO extents ({} of its {} bytes store nothing)",
                                   p.name, p.size - stored, p.size));
  }
  return Status::Ok();
}

}  // namespace

Result<PartitionSpec> ParsePartitionSpec(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("--partition '{}': {}; expected {}", text, why, kPartitionSyntax));
  };
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) return bad("no '='");
  PartitionSpec spec;
  spec.name = std::string(text.substr(0, eq));
  std::string_view rest = text.substr(eq + 1);
  if (!IsValidName(spec.name)) return bad("NAME must be 1-36 printable characters without ':' or '='");
  size_t c2 = rest.rfind(':');
  size_t c1 = c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos : rest.rfind(':', c2 - 1);
  if (c1 != std::string_view::npos) {
    auto off = ParseSize(rest.substr(c1 + 1, c2 - c1 - 1));
    auto size = ParseSize(rest.substr(c2 + 1));
    if (off.ok() && size.ok()) {
      if (*size == 0) return bad("SIZE is 0");
      spec.offset = *off;
      spec.size = *size;
      spec.ranged = true;
      rest = rest.substr(0, c1);
    }
  }
  if (rest.empty()) return bad("empty PATH");
  spec.path = std::string(rest);
  return spec;
}

Storage::Storage() = default;
Storage::~Storage() = default;

Status Storage::AddPartition(Partition p) {
  if (!IsValidName(p.name)) return InvalidArgument(fmt::format("partition name '{}' not usable", p.name));
  if (Find(p.name) != nullptr) return InvalidArgument(fmt::format("partition '{}' defined twice", p.name));
  const auto& g = backings_[p.backing]->geometry;
  if (p.size == 0 || p.offset > g.size || p.size > g.size - p.offset) {
    return InvalidArgument(fmt::format("partition '{}': range {}+{} outside {} ({} bytes)", p.name,
                                       p.offset, p.size, backings_[p.backing]->path, g.size));
  }
  for (const auto& q : partitions_) {
    if (q.backing == p.backing && p.offset < q.offset + q.size && q.offset < p.offset + p.size) {
      return InvalidArgument(fmt::format("partitions '{}' and '{}' overlap", q.name, p.name));
    }
  }
  partitions_.push_back(std::move(p));
  return Status::Ok();
}

Result<std::unique_ptr<Storage>> Storage::OpenGpt(const std::string& path, const WriteOptions& options,
                                                  std::vector<std::string>* warnings) {
  std::unique_ptr<Storage> s(new Storage());
  s->options_ = options;
  s->table_disk_ = true;
  // Before Target::Open, which would create a missing file: a disk is never made up.
  if (UniqueFd probe(::open(path.c_str(), O_RDONLY | O_CLOEXEC)); !probe.valid()) return ErrnoError("open " + path);
  FP_ASSIGN_OR_RETURN(auto target, io::Target::Open(path, {.force = options.force}));
  auto b = std::make_unique<Backing>();
  b->path = path;
  b->geometry = target->geometry();
  FP_ASSIGN_OR_RETURN(b->owned_queue, target->MakeQueue(options.backend, std::max(options.queue_depth, 4u)));
  b->queue = b->owned_queue.get();
  b->target = std::move(target);
  s->backings_.push_back(std::move(b));
  FP_RETURN_IF_ERROR(s->LoadGpt(warnings));
  return s;
}

// Through a buffered descriptor of its own: the target's is O_DIRECT, and
// a table just written by ChangeTable is in the page cache.
Status Storage::LoadGpt(std::vector<std::string>* warnings) {
  const Backing& b = *backings_[0];
  const std::string& path = b.path;
  UniqueFd rfd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!rfd.valid()) return ErrnoError("open " + path);
  uint32_t sector = b.geometry.block_device ? b.geometry.logical_block : 0;
  auto read_at = [&](uint64_t off, std::span<uint8_t> out) { return PreadExact(rfd.get(), out, off, path); };
  auto table = io::ReadGpt(read_at, b.geometry.size, sector);
  std::vector<Partition> old = std::exchange(partitions_, {});
  // What other devices hold (serve --mmc's boot areas) is not the table's: kept.
  std::vector<Partition> beside;
  std::copy_if(old.begin(), old.end(), std::back_inserter(beside), [](const Partition& p) { return p.backing != 0; });
  if (!table.ok()) {
    if (table.status().code() != Code::kNotFound && table.status().code() != Code::kInvalidArgument &&
        table.status().code() != Code::kCorrupt) {
      partitions_ = std::move(old);
      return table.status().WithContext(path);
    }
    warnings->push_back(fmt::format("{}: no partitions: {} (fastboot flash gpt LAYOUT, or oem format with "
                                    "serve --layout, writes a table)", path, table.status().ToString()));
    partitions_ = std::move(beside);
    return Status::Ok();
  }
  for (const auto& w : table->warnings) warnings->push_back(path + ": " + w);
  for (const auto& e : table->partitions) {
    Partition p{e.name, 0, e.first_lba * table->sector_size,
                (e.last_lba - e.first_lba + 1) * table->sector_size, e.type_guid};
    if (!IsValidName(p.name)) {
      warnings->push_back(
          fmt::format("{}: GPT entry {} name '{}' not usable, skipped", path, e.index, log::Printable(p.name, 80)));
      continue;
    }
    if (Status st = AddPartition(std::move(p)); !st.ok()) {
      partitions_ = std::move(old);
      return st.WithContext(path);
    }
  }
  if (partitions_.empty()) warnings->push_back(path + ": GPT has no usable partitions");
  for (Partition& p : beside) {
    if (Status st = AddPartition(std::move(p)); !st.ok()) {
      partitions_ = std::move(old);
      return st.WithContext("the partitions beside the disk's table");
    }
  }
  return Status::Ok();
}

Result<partition::PartitionOutcome> Storage::ChangeTable(std::span<const uint8_t> source, std::string_view source_name,
                                                         char slot, std::vector<std::string>* warnings,
                                                         const partition::ApproveFn& approve) {
  if (!table_disk_) {
    return Unsupported("the partitions are --partition files, not a disk's table (serve --storage DISK)");
  }
  const Backing& b = *backings_[0];
  partition::HeldDisk held{.path = b.path, .claim_fd = b.target->fd(),
                           .claimed = b.geometry.block_device && !options_.force};
  FP_ASSIGN_OR_RETURN(partition::PartitionOutcome out, partition::ChangeHeldDiskTable(held, source, source_name, {.approve = approve}));
  FP_RETURN_IF_ERROR(ReloadTable(slot, warnings).WithContext("the table was written but not read back"));
  return out;
}

Result<std::optional<partition::KernelUpdate>> Storage::TellKernelAfterWholeDiskFlash(const Partition& p) {
  const Backing& b = *backings_[p.backing];
  if (table_disk_ || p.logical || b.target == nullptr || !b.geometry.block_device || p.offset != 0 ||
      p.size != b.geometry.size) {
    return std::optional<partition::KernelUpdate>();
  }
  return partition::UpdateAfterWholeDiskWrite(b.path, std::chrono::milliseconds(10000), b.target->fd());
}

Status Storage::ReloadTable(char slot, std::vector<std::string>* warnings) {
  if (!table_disk_) return Unsupported("no disk table to read again");
  dynamic_.reset();  // its partitions lie in the old super
  FP_RETURN_IF_ERROR(LoadGpt(warnings));
  if (super_name_.empty() || Find(super_name_) == nullptr) return Status::Ok();
  if (Status st = AttachSuper(super_name_, slot); !st.ok()) {
    dynamic_.reset();
    warnings->push_back(fmt::format("super '{}': {}", super_name_, st.ToString()));
  }
  return Status::Ok();
}

// The backing for `path` (realpath'd): the one opened already, or a new one.
Result<size_t> Storage::OpenBacking(const std::string& what, const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return ErrnoError(fmt::format("partition '{}': {}", what, path));
  std::string canon(real);
  std::free(real);
  auto it = std::find_if(backings_.begin(), backings_.end(), [&](const auto& b) { return b->path == canon; });
  if (it != backings_.end()) return static_cast<size_t>(it - backings_.begin());
  FP_ASSIGN_OR_RETURN(auto target, io::Target::Open(canon, {.force = options_.force}));
  auto b = std::make_unique<Backing>();
  b->path = canon;
  b->geometry = target->geometry();
  FP_ASSIGN_OR_RETURN(b->owned_queue, target->MakeQueue(options_.backend, std::max(options_.queue_depth, 4u)));
  b->queue = b->owned_queue.get();
  b->target = std::move(target);
  backings_.push_back(std::move(b));
  return backings_.size() - 1;
}

Result<std::unique_ptr<Storage>> Storage::OpenSpecs(const std::vector<PartitionSpec>& specs,
                                                    const WriteOptions& options) {
  std::unique_ptr<Storage> s(new Storage());
  s->options_ = options;
  for (const auto& spec : specs) {
    FP_ASSIGN_OR_RETURN(size_t index, s->OpenBacking(spec.name, spec.path));
    const Backing& b = *s->backings_[index];
    if (spec.ranged) FP_RETURN_IF_ERROR(CheckAligned(spec, b.geometry));
    uint64_t size = spec.ranged ? spec.size : b.geometry.size;
    FP_RETURN_IF_ERROR(s->AddPartition({spec.name, index, spec.offset, size}));
  }
  return s;
}

Status Storage::AddWholeDevice(const std::string& name, const std::string& path) {
  FP_ASSIGN_OR_RETURN(size_t index, OpenBacking(name, path));
  return AddPartition({name, index, 0, backings_[index]->geometry.size});
}

std::unique_ptr<Storage> Storage::ForQueue(io::IoQueue* queue, io::Geometry geometry,
                                           std::vector<Partition> partitions, WriteOptions options) {
  std::unique_ptr<Storage> s(new Storage());
  s->options_ = options;
  auto b = std::make_unique<Backing>();
  b->queue = queue;
  b->geometry = geometry;
  s->backings_.push_back(std::move(b));
  for (auto& p : partitions) {
    p.backing = 0;
    s->partitions_.push_back(std::move(p));
  }
  return s;
}

std::vector<Partition> Storage::partitions() const {
  std::vector<Partition> all = partitions_;
  if (dynamic_) all.insert(all.end(), dynamic_->partitions().begin(), dynamic_->partitions().end());
  return all;
}

const Partition* Storage::Find(std::string_view name) const {
  for (const auto& p : partitions_) {
    if (p.name == name) return &p;
  }
  return dynamic_ ? dynamic_->Find(name) : nullptr;
}

Status Storage::AttachSuper(const std::string& name, char slot, std::unique_ptr<lp::BlockIo> io) {
  auto it = std::find_if(partitions_.begin(), partitions_.end(), [&](const Partition& p) { return p.name == name; });
  if (it == partitions_.end()) return NotFound(fmt::format("super partition '{}' not found", name));
  if (io == nullptr) {
    FP_ASSIGN_OR_RETURN(io, OpenSuperIo(backings_[it->backing]->path, name, it->offset, it->size));
  }
  FP_ASSIGN_OR_RETURN(dynamic_, DynamicPartitions::Open(*it, std::move(io), slot));
  for (const auto& p : dynamic_->partitions()) {
    if (std::any_of(partitions_.begin(), partitions_.end(), [&](const Partition& q) { return q.name == p.name; })) {
      log::Warn("logical partition '{}' is hidden by the physical partition of that name", p.name);
    }
  }
  return Status::Ok();
}

bool Storage::IsSuper(const Partition& p) const {
  return dynamic_ != nullptr && !p.logical && p.name == dynamic_->super().name;
}

const io::Geometry& Storage::geometry(const Partition& p) const { return backings_[p.backing]->geometry; }

const std::string& Storage::path(const Partition& p) const { return backings_[p.backing]->path; }

std::string Storage::ProbeType(const Partition& p) const {
  const auto& path = backings_[p.backing]->path;
  if (path.empty() || (p.logical && p.extents.empty())) return "raw";
  // A logical partition: its first extent holds the superblock.
  const uint64_t offset = p.logical ? p.extents[0].device_offset : p.offset;
  const uint64_t size = p.logical ? p.extents[0].length : p.size;
  // A buffered fd of its own: the target's is O_DIRECT, which blkid's
  // unaligned reads would trip over.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "raw";
  blkid_probe pr = blkid_new_probe();
  if (pr == nullptr) return "raw";
  std::string type = "raw";
  if (blkid_probe_set_device(pr, fd.get(), static_cast<blkid_loff_t>(offset), static_cast<blkid_loff_t>(size)) ==
      0) {
    blkid_probe_enable_superblocks(pr, 1);
    blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
    const char* value = nullptr;
    if (blkid_do_safeprobe(pr) == 0 && blkid_probe_lookup_value(pr, "TYPE", &value, nullptr) == 0) {
      type = value;
    }
  }
  blkid_free_probe(pr);
  return type;
}

// A boot area (mmcblkNbootM) is read-only until its force_ro is lifted: for
// the one write or erase the guard is held, whatever its outcome.
Result<mmc::ForceRoGuard> Storage::BootAreaWritable(const Partition& p) const {
  const Backing& b = *backings_[p.backing];
  struct stat st;
  if (b.target == nullptr || ::fstat(b.target->fd(), &st) != 0 || !S_ISBLK(st.st_mode)) return mmc::ForceRoGuard();
  return mmc::ForceRoGuard::ReleaseDevice(st.st_rdev, options_.sysfs_root);
}

Status Storage::Write(const Partition& p, std::span<const std::span<const uint8_t>> pieces, bool is_sparse,
                      const ProgressFn& progress, bool sync) {
  FP_RETURN_IF_ERROR(CheckWritable(p));
  FP_ASSIGN_OR_RETURN(mmc::ForceRoGuard writable, BootAreaWritable(p));
  io::WriterOptions wo{.request_size = options_.request_size, .queue_depth = options_.queue_depth};
  wo.progress = progress;
  wo.sync = sync;
  wo.stock = &stock_;
  wo.borrow_raw = true;  // the image stays in the download buffer until Finish()
  FP_ASSIGN_OR_RETURN(auto sink, io::MakeWriteSink(options_.model, DeviceOf(*backings_[p.backing], p), wo));
  Status st = is_sparse ? DecodePieces(pieces, *sink) : FeedRawPieces(pieces, *sink);
  Status fin = sink->Finish();
  if (!st.ok()) return st.WithContext(fmt::format("partition '{}'", p.name));
  return fin.WithContext(fmt::format("partition '{}'", p.name));
}

Status Storage::WriteStream(const Partition& p, DownloadStream& stream, bool sync) {
  FP_RETURN_IF_ERROR(CheckWritable(p));
  io::WriterOptions wo{.request_size = options_.request_size, .queue_depth = options_.queue_depth};
  wo.sync = sync;
  wo.stock = &stock_;
  wo.borrow_raw = true;  // the download buffer stays busy until this returns
  FP_ASSIGN_OR_RETURN(auto sink, io::MakeWriteSink(options_.model, DeviceOf(*backings_[p.backing], p), wo));
  uint8_t head[4];
  size_t head_len = 0;
  std::optional<sparse::Decoder> decoder;  // decided by the first bytes: sparse or raw
  bool decided = false;
  uint64_t at = 0;  // raw: image offset of the next byte
  // Each span in order, once the image's kind is known from its magic.
  auto feed = [&](std::span<const uint8_t> span) -> Status {
    if (!decided) {
      size_t take = std::min(span.size(), sizeof head - head_len);
      std::memcpy(head + head_len, span.data(), take);
      head_len += take;
      if (head_len < sizeof head && head_len < stream.size()) return Status::Ok();  // copied; more to come
      decided = true;
      if (sparse::HasSparseMagic(std::span<const uint8_t>(head, head_len))) {
        decoder.emplace(sink.get(), sparse::DecoderOptions{.check_crc = false, .tolerate_missing_tail = true});
        // The magic's bytes from earlier spans (never a payload's).
        if (size_t earlier = head_len - take; earlier > 0) {
          FP_RETURN_IF_ERROR(decoder->Feed(std::span<const uint8_t>(head, earlier)));
        }
      } else if (stream.size() > p.size) {
        return NoSpace(fmt::format("image of {} bytes > partition '{}' of {} bytes", stream.size(), p.name, p.size));
      } else if (size_t earlier = head_len - take; earlier > 0) {
        FP_RETURN_IF_ERROR(sink->OnRaw(0, std::span<const uint8_t>(head, earlier)));
        at = earlier;
      }
    }
    if (decoder) {
      Status st = decoder->Feed(span);
      return st.code() == Code::kCorrupt ? st.WithContext("invalid sparse image") : st;
    }
    Status st = sink->OnRaw(at, span);
    at += span.size();
    return st;
  };
  Status st;
  for (;;) {
    auto spans = stream.Next(stream.step());
    if (!spans.ok()) {
      st = spans.status();
      break;
    }
    if (spans->empty()) break;
    for (auto span : *spans) {
      if (st = feed(span); !st.ok()) break;
    }
    if (!st.ok()) break;
  }
  if (st.ok() && !decided) st = feed({});  // fewer than 4 bytes in all
  if (st.ok()) st = decoder ? decoder->Finish() : sink->OnEnd();
  Status fin = sink->Finish();
  if (!st.ok()) {
    uint64_t changed = sink->stats().changed_end;
    std::string where = changed == 0 ? "nothing written"
                                     : fmt::format("written up to byte {} as it arrived", changed);
    return st.WithContext(fmt::format("partition '{}' ({})", p.name, where));
  }
  return fin.WithContext(fmt::format("partition '{}'", p.name));
}

Status Storage::Sync(const Partition& p) {
  // The discard model wrote nothing, so there is nothing to flush.
  if (options_.model.kind == io::WriteModelKind::kDiscard) return Status::Ok();
  return backings_[p.backing]->queue->Sync().WithContext(fmt::format("partition '{}'", p.name));
}

Result<ReadView> Storage::OpenRead(const Partition& p) const {
  // A read view is one window: a logical partition is read back only when
  // it is one LINEAR extent, never [offset, +size) across other partitions.
  if (p.logical && (p.extents.size() != 1 || p.extents[0].device_offset != p.offset || p.extents[0].length != p.size)) {
    return Unsupported(fmt::format("logical partition '{}' in {} extents cannot be read back", p.name, p.extents.size()));
  }
  const Backing& b = *backings_[p.backing];
  UniqueFd fd;
  if (b.target != nullptr) {
    fd.Reset(::fcntl(b.target->fd(), F_DUPFD_CLOEXEC, 0));
    if (!fd.valid()) return ErrnoError(fmt::format("partition '{}': dup {}", p.name, b.path));
  } else {
    // ForQueue: the caller's queue does the reads; the reader still stats
    // its target's file, so it gets one of the storage's size.
    fd.Reset(::memfd_create("flashpipe-storage", MFD_CLOEXEC));
    if (!fd.valid() || ::ftruncate(fd.get(), static_cast<off_t>(b.geometry.size)) != 0) {
      return ErrnoError(fmt::format("partition '{}': memfd", p.name));
    }
  }
  ReadView view;
  view.target = io::Target::FromFd(std::move(fd), b.path.empty() ? "storage" : b.path, b.geometry, p.offset, p.size);
  view.queue = b.queue;
  view.request_size = options_.request_size;
  view.skip_holes = b.target != nullptr && !b.geometry.block_device;
  return view;
}

Status Storage::Erase(const Partition& p) {
  if (p.logical && p.size == 0) return Status::Ok();  // nothing to erase
  FP_RETURN_IF_ERROR(CheckWritable(p));
  FP_ASSIGN_OR_RETURN(mmc::ForceRoGuard writable, BootAreaWritable(p));
  Status st = EraseRanges(*backings_[p.backing], p);
  if (IsSuper(p)) dynamic_->Reload();
  return st;
}

Status Storage::EraseRanges(const Backing& b, const Partition& p) {
  std::vector<io::DeviceExtent> ranges = p.logical ? p.extents : std::vector<io::DeviceExtent>{{p.offset, p.size}};
  bool aligned = std::all_of(ranges.begin(), ranges.end(), [](const io::DeviceExtent& r) {
    return r.device_offset % 512 == 0 && r.length % 512 == 0;
  });
  if (aligned || !b.geometry.block_device) {
    Status st;
    for (const auto& r : ranges) {
      io::IoOp op{.kind = b.geometry.block_device ? io::OpKind::kZeroOut : io::OpKind::kPunchHole,
                  .offset = r.device_offset, .length = r.length};
      st = RunOp(b.queue, op);
      if (!st.ok()) break;
    }
    if (st.ok()) return b.queue->Sync();
  }
  // Fallback: real zeros through the writer (bounds-checked there).
  io::Device dev = DeviceOf(b, p);
  io::WriterOptions wo{.request_size = options_.request_size, .queue_depth = options_.queue_depth,
                       .zero_mode = io::ZeroMode::kWrite};
  wo.stock = &stock_;
  FP_ASSIGN_OR_RETURN(auto writer, io::ImageWriter::Create({dev}, wo));
  uint64_t fill = p.size / 4 * 4;
  Status st = writer->OnFill(0, fill, 0);
  if (st.ok() && fill < p.size) {
    static const uint8_t kZeros[4] = {};
    st = writer->OnRaw(fill, std::span<const uint8_t>(kZeros, p.size - fill));
  }
  Status fin = writer->Finish();
  if (!st.ok()) return st.WithContext(fmt::format("erase '{}'", p.name));
  return fin.WithContext(fmt::format("erase '{}'", p.name));
}

// The whole logical blocks holding bytes [offset, offset + length) of `p`:
// the unit the device reads and writes without tearing.
Result<Storage::BlockWindow> Storage::Blocks(const Partition& p, uint64_t offset, uint64_t length) const {
  const Backing& b = *backings_[p.backing];
  if (offset > p.size || length > p.size - offset) {
    return InvalidArgument(fmt::format("partition '{}': bytes {}+{} outside its {} bytes", p.name, offset, length,
                                       p.size));
  }
  uint64_t unit = std::max<uint64_t>(b.geometry.logical_block, 512);
  uint64_t at = p.offset + offset;
  BlockWindow w{.start = at / unit * unit, .end = (at + length + unit - 1) / unit * unit, .skip = 0};
  w.skip = at - w.start;
  if (w.start < p.offset || w.end > p.offset + p.size) {
    return InvalidArgument(fmt::format("partition '{}': the {}-byte block holding bytes {}+{} is not inside it",
                                       p.name, unit, offset, length));
  }
  return w;
}

Result<AlignedBuffer> Storage::ReadBlocks(const Partition& p, const BlockWindow& w) {
  const Backing& b = *backings_[p.backing];
  AlignedBuffer buf(w.end - w.start, std::max<size_t>(b.geometry.mem_align, 512));
  io::IoOp read{.kind = io::OpKind::kRead, .offset = w.start, .length = w.end - w.start, .buf = buf.data()};
  FP_RETURN_IF_ERROR(RunOp(b.queue, read).WithContext(fmt::format("partition '{}': read", p.name)));
  return buf;
}

Status Storage::Read(const Partition& p, uint64_t offset, std::span<uint8_t> out) {
  FP_ASSIGN_OR_RETURN(BlockWindow w, Blocks(p, offset, out.size()));
  FP_ASSIGN_OR_RETURN(AlignedBuffer buf, ReadBlocks(p, w));
  std::copy_n(buf.data() + w.skip, out.size(), out.begin());
  return Status::Ok();
}

Status Storage::UpdateInPlace(const Partition& p, uint64_t offset, uint64_t length,
                              const std::function<Status(std::span<uint8_t>)>& edit) {
  const Backing& b = *backings_[p.backing];
  FP_ASSIGN_OR_RETURN(BlockWindow w, Blocks(p, offset, length));
  FP_ASSIGN_OR_RETURN(AlignedBuffer buf, ReadBlocks(p, w));
  FP_RETURN_IF_ERROR(edit(buf.span().subspan(w.skip, length)));
  io::IoOp write{.kind = io::OpKind::kWrite, .offset = w.start, .length = w.end - w.start, .buf = buf.data()};
  FP_RETURN_IF_ERROR(RunOp(b.queue, write).WithContext(fmt::format("partition '{}': write", p.name)));
  return b.queue->Sync().WithContext(fmt::format("partition '{}': sync", p.name));
}

}  // namespace flashpipe::fastboot
