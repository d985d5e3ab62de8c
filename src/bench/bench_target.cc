#include "bench/bench_target.h"

#include <blkid/blkid.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>

#include "base/units.h"

namespace flashpipe::bench {
namespace {

constexpr uint64_t kMmcTestAlign = uint64_t{0x10000} * 512;  // 32 MiB

std::string Lookup(blkid_probe pr, const char* name) {
  const char* value = nullptr;
  if (blkid_probe_lookup_value(pr, name, &value, nullptr) == 0 && value) return value;
  return "";
}

// /sys/dev/block/M:m/queue/<attr>, or the parent disk's for a partition.
std::string SysQueueAttr(dev_t dev, const char* attr) {
  const std::string base = fmt::format("/sys/dev/block/{}:{}", major(dev), minor(dev));
  for (const char* rel : {"/queue/", "/../queue/"}) {
    std::ifstream in(base + rel + attr);
    std::string v;
    if (in >> v) return v;
  }
  return "";
}

// The area as mmc_test chooses it (bench_target.h).
Area MmcTestArea(uint64_t capacity, uint64_t want, uint64_t align, bool from_start) {
  Area a;
  if (!from_start) {
    const uint64_t quarter = capacity / 4;
    a.offset = quarter / kMmcTestAlign * kMmcTestAlign;
    if (a.offset == 0) a.offset = quarter / (1 << 20) * (1 << 20);
    a.offset = a.offset / align * align;
  }
  uint64_t size = std::min(want, from_start ? capacity : capacity / 2);
  size = std::min(size, capacity - a.offset);
  a.size = size / align * align;
  return a;
}

}  // namespace

Area ChooseArea(uint64_t capacity, uint64_t want, uint64_t align, bool from_start, uint64_t need) {
  align = std::max<uint64_t>(align, 1);
  Area a = MmcTestArea(capacity, want, align, from_start);
  if (from_start || a.size >= need) return a;
  return Area{0, std::min(want, capacity) / align * align};
}

Result<std::string> ProbeSignature(const std::string& path) {
  blkid_probe pr = blkid_new_probe_from_filename(path.c_str());
  if (pr == nullptr) return ErrnoError("blkid: cannot probe " + path);
  blkid_probe_enable_superblocks(pr, 1);
  blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
  blkid_probe_enable_partitions(pr, 1);
  blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
  const int rc = blkid_do_safeprobe(pr);
  std::string found;
  if (rc == 0) {
    if (std::string t = Lookup(pr, "TYPE"); !t.empty()) found = t + " filesystem";
    else if (std::string p = Lookup(pr, "PTTYPE"); !p.empty()) found = p + " partition table";
    else found = "a signature";
  } else if (rc == -2) {
    found = "several conflicting signatures";
  }
  blkid_free_probe(pr);
  if (rc == -1) return IoError("blkid: probing " + path + " failed", EIO);
  return found;
}

Result<std::unique_ptr<BenchTarget>> BenchTarget::Open(const std::string& text,
                                                       const BenchTargetOptions& options) {
  auto t = std::unique_ptr<BenchTarget>(new BenchTarget());
  t->name_ = text;
  t->backend_ = options.backend;
  if (IsSimTarget(text)) {
    FP_ASSIGN_OR_RETURN(SimSpec spec, ParseSimSpec(text));
    t->sim_ = spec;
    t->geometry_ = SimGeometry(spec);
    if (spec.time == SimTime::kReal) t->clock_ = std::make_unique<RealClock>();
    else t->clock_ = std::make_unique<SkipClock>();
    t->backend_name_ = "sim";
    return t;
  }
  t->clock_ = std::make_unique<RealClock>();
  FP_RETURN_IF_ERROR(t->OpenReal(options));
  return t;
}

Status BenchTarget::OpenReal(const BenchTargetOptions& options) {
  struct stat st;
  const bool exists = stat(name_.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return ErrnoError("cannot stat " + name_);
  io::TargetOptions to;
  to.read_only = !options.destructive;
  if (!exists) {
    if (!options.destructive) return NotFound(name_ + ": does not exist (nothing to read)");
    if (options.new_file_size == 0) return InvalidArgument(name_ + ": no size to create it with");
    to.create = true;
    to.truncate_to = options.new_file_size;
  } else if (S_ISREG(st.st_mode) && options.destructive && !options.force) {
    return InvalidArgument(fmt::format(
        "{}: is an existing file; bench creates and removes its own files: give a path that does "
        "not exist, or --force to overwrite the middle of this one",
        name_));
  } else if (S_ISBLK(st.st_mode) && options.destructive) {
    FP_ASSIGN_OR_RETURN(std::string sig, ProbeSignature(name_));
    if (!sig.empty() && !options.force) {
      return Busy(fmt::format("{}: holds {}; the write tests would destroy part of it "
                              "(--force to write anyway)", name_, sig));
    }
  }
  FP_ASSIGN_OR_RETURN(target_, io::Target::Open(name_, to));
  created_ = !exists;
  geometry_ = target_->geometry();
  if (options.buffered_reads) {
    int fd = open(name_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("cannot open " + name_ + " for buffered reads");
    io::Geometry g = geometry_;
    g.direct = false;
    buffered_ = io::Target::FromFd(UniqueFd(fd), name_, g);
  }
  return Status::Ok();
}

BenchTarget::~BenchTarget() {
  if (created_) unlink(name_.c_str());
}

std::string BenchTarget::Describe() const {
  if (sim_) {
    return fmt::format("simulated device {}, {}, logical block {}, {} MB/s, {} us per command, {} time",
                       FormatSimSpec(*sim_), FormatBytes(sim_->size), sim_->lbs, sim_->bw / 1e6,
                       sim_->cmd_ns / 1000.0, sim_->time == SimTime::kReal ? "real" : "virtual");
  }
  const char* kind = geometry_.block_device ? "block device" : created_ ? "new regular file" : "regular file";
  return fmt::format("{} {}, {}, logical block {}, physical {}, {}", kind, name_, FormatBytes(geometry_.size),
                     geometry_.logical_block, geometry_.physical_block,
                     geometry_.direct ? "O_DIRECT" : "buffered (no O_DIRECT on this filesystem)");
}

Result<std::unique_ptr<io::IoQueue>> BenchTarget::MakeQueue(unsigned depth, bool buffered) {
  std::unique_ptr<io::IoQueue> q;
  if (sim_) {
    q = std::make_unique<SimQueue>(*sim_, clock_.get(), depth);
  } else {
    const io::Target* t = buffered && buffered_ ? buffered_.get() : target_.get();
    FP_ASSIGN_OR_RETURN(q, t->MakeQueue(backend_, depth));
  }
  backend_name_ = std::string(q->name());
  return q;
}

void BenchTarget::DropCache(uint64_t offset, uint64_t length) {
  if (buffered_) {
    (void)posix_fadvise(buffered_->fd(), static_cast<off_t>(offset), static_cast<off_t>(length),
                        POSIX_FADV_DONTNEED);
  }
}

std::string BenchTarget::ReadAheadInfo() const {
  if (sim_ || !target_) return "read-ahead: n/a (simulated device)";
  struct stat st;
  if (fstat(target_->fd(), &st) != 0) return "read-ahead: unknown";
  if (S_ISBLK(st.st_mode)) {
    long sectors = 0;
    std::string ra = ioctl(target_->fd(), BLKRAGET, &sectors) == 0
                         ? fmt::format("BLKRAGET {} sectors = {} KiB", sectors, sectors / 2)
                         : std::string("BLKRAGET failed");
    std::string kb = SysQueueAttr(st.st_rdev, "read_ahead_kb");
    return fmt::format("read-ahead: {}, queue/read_ahead_kb {}", ra, kb.empty() ? "?" : kb);
  }
  std::string kb = SysQueueAttr(st.st_dev, "read_ahead_kb");
  return fmt::format("read-ahead: the filesystem's device queue/read_ahead_kb {} (file on {}:{})",
                     kb.empty() ? "?" : kb, major(st.st_dev), minor(st.st_dev));
}

}  // namespace flashpipe::bench
