// WriteTargets: checking every target first, changing them in one place.
#include "input/write_targets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/image_sink.h"
#include "io/device_users.h"
#include "mmc/boot_area.h"

namespace flashpipe::input {
namespace {

// The window of a regular-file target while a stream's size is unknown; the
// file is cut to the real size at the end.
constexpr uint64_t kStreamWindow = uint64_t{1} << 50;

// kWindowFile: an existing file written in place inside a window (a
// partition of a disk image, --offset/--size), never truncated nor replaced.
enum class Mode { kBlockDevice, kInPlaceFile, kWindowFile, kNewFile };

// Writing one changes the other: one file, or overlapping block devices.
bool SameData(const FileId& a, const FileId& b) {
  if (a.block_device && b.block_device) return io::BlockDevicesOverlap(a.dev, b.dev);
  return a == b;
}

// A file behind a loop device that is mounted or held: writing it changes a
// file system under the kernel's feet.
Status RefuseLoopBacking(const std::string& path, const FileId& id, bool force) {
  for (const io::BlockUse& loop : io::LoopDevicesBackedBy(id)) {
    if (!loop.in_use() || force) continue;
    return Busy(fmt::format("{} is the backing file of {}; writing it would corrupt what is on that device. "
                            "Unmount it and detach the loop device (losetup -d {}) first, or --force to write anyway",
                            path, loop.Describe(), loop.device));
  }
  return Status::Ok();
}

// Where a file written at a path lands: the file or device there now, or
// the directory and name a new file gets (after following symlinks).
struct Landing {
  std::optional<FileId> id;
  FileId dir;
  std::string base;
  bool nowhere = false;  // a pipe or terminal on stdout: keeps no data

  bool Overlaps(const Landing& o) const {
    if (nowhere || o.nowhere) return false;
    if (id && o.id) return SameData(*id, *o.id);
    return !id && !o.id && dir == o.dir && base == o.base;
  }
  bool Overlaps(const FileId& file) const { return !nowhere && id && SameData(*id, file); }
};

Result<Landing> LandingOf(const std::string& path) {
  Landing l;
  struct stat st;
  if (path == "-") {
    l.nowhere = ::fstat(STDOUT_FILENO, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
    if (!l.nowhere) l.id = FileIdOf(st);
    return l;
  }
  if (::stat(path.c_str(), &st) == 0) {
    l.id = FileIdOf(st);
    return l;
  }
  FP_ASSIGN_OR_RETURN(std::string final_path, FollowSymlinks(path));
  if (::stat(DirName(final_path).c_str(), &st) != 0) {
    l.nowhere = true;  // cannot be created at all
    return l;
  }
  l.dir = FileIdOf(st);
  l.base = BaseName(final_path);
  return l;
}

}  // namespace

struct WriteTargets::Entry : Landing {
  std::string path;  // as given (TARGET or TARGET:PARTNAME)
  Mode mode = Mode::kNewFile;
  std::string partition;                   // TARGET:PARTNAME's name
  std::optional<io::TargetWindow> window;  // a windowed target
  mmc::ForceRoGuard force_ro;  // before `target`: restored after it is closed
  std::unique_ptr<io::Target> target;
  std::optional<AtomicFile> temp;
  std::unique_ptr<io::IoQueue> queue;
  bool size_unknown = false;
  bool truncated = false;
  Status status;          // this target's first failure
  bool checked = false;   // CheckOne passed: the fields above describe it
  bool committed = false;

  // Records a failure of this target; returns it.
  Status Fail(const Status& s) {
    if (status.ok()) status = s;
    return s;
  }
  // Written in place with a fixed size: the image must fit.
  bool bounded() const { return mode == Mode::kBlockDevice || mode == Mode::kWindowFile; }
  std::string what() const { return window ? window->what : path; }
};

namespace {

using Entry = WriteTargets::Entry;

// A path that does not exist yet: it will be created (through its symlinks)
// in a directory that must exist and be writable.
Result<std::unique_ptr<Entry>> CheckNew(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string final_path, FollowSymlinks(path));
  if (io::IsDevicePath(path) || io::IsDevicePath(final_path)) return NotFound(path + ": no such file or device");
  std::string dir = DirName(final_path);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoError(fmt::format("cannot create {}: directory {}", path, dir));
  if (!S_ISDIR(st.st_mode)) return InvalidArgument(fmt::format("cannot create {}: {} is not a directory", path, dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return ErrnoError(fmt::format("cannot create {} in {}", path, dir));
  auto e = std::make_unique<Entry>();
  e->path = path;
  e->dir = FileIdOf(st);
  e->base = BaseName(final_path);
  return e;
}

// An existing regular file: written beside and renamed over (a writable
// file in a writable directory), or in place when asked.
Result<std::unique_ptr<Entry>> CheckFile(const std::string& path, const struct stat& st, const TargetPolicy& policy) {
  auto e = std::make_unique<Entry>();
  e->path = path;
  e->id = FileIdOf(st);
  FP_RETURN_IF_ERROR(RefuseLoopBacking(path, *e->id, policy.force));
  if (policy.in_place) {
    e->mode = Mode::kInPlaceFile;
    FP_ASSIGN_OR_RETURN(e->target, io::Target::Open(path, {.force = policy.force}));
    return e;
  }
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot write {}", path));
  FP_ASSIGN_OR_RETURN(std::string final_path, FollowSymlinks(path));
  std::string dir = DirName(final_path);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return ErrnoError(fmt::format("cannot replace {} (--in-place writes into it instead): directory {}", path, dir));
  }
  return e;
}

// TARGET:PARTNAME, or a target with --offset/--size: an existing file or
// device, its window resolved (and refused) before anything is written.
Result<std::unique_ptr<Entry>> CheckWindowed(const std::string& given, const io::TargetSpec& spec,
                                             const TargetPolicy& policy) {
  if (!spec.exists) {
    return NotFound(fmt::format("{}: no such file or device (a window, --offset or --size, is written into an "
                                "existing one)", given));
  }
  const bool blk = S_ISBLK(spec.st.st_mode);
  if (!blk && !S_ISREG(spec.st.st_mode)) {
    return InvalidArgument(fmt::format("{}: not a regular file or block device", spec.path));
  }
  auto e = std::make_unique<Entry>();
  e->path = given;
  e->id = FileIdOf(spec.st);
  e->mode = blk ? Mode::kBlockDevice : Mode::kWindowFile;
  e->partition = spec.partition;
  if (!blk) FP_RETURN_IF_ERROR(RefuseLoopBacking(spec.path, *e->id, policy.force));
  FP_ASSIGN_OR_RETURN(e->target, io::Target::Open(spec.path, {.force = policy.force}));
  FP_ASSIGN_OR_RETURN(e->window, io::SetWriteWindow(spec, policy.window, e->target.get()));
  return e;
}

Result<std::unique_ptr<Entry>> CheckOne(const std::string& path, const TargetPolicy& policy) {
  io::TargetSpec spec = io::ParseTargetSpec(path);
  if (io::IsWindowed(spec, policy.window)) return CheckWindowed(path, spec, policy);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError("cannot stat " + path);
    return CheckNew(path);
  }
  if (S_ISREG(st.st_mode)) return CheckFile(path, st, policy);
  if (!S_ISBLK(st.st_mode)) {
    return InvalidArgument(fmt::format("{}: {}", path, S_ISDIR(st.st_mode) ? "is a directory, not a file or block device"
                                                                        : "not a regular file or block device"));
  }
  auto e = std::make_unique<Entry>();
  e->path = path;
  e->mode = Mode::kBlockDevice;
  e->id = FileIdOf(st);
  FP_ASSIGN_OR_RETURN(e->target, io::Target::Open(path, {.force = policy.force}));
  return e;
}

Status RefuseDuplicate(const std::vector<std::unique_ptr<Entry>>& seen, const Entry& e) {
  for (const auto& s : seen) {
    if (!s->checked || !s->Overlaps(e)) continue;
    if (e.id && e.id->block_device && s->id->dev != e.id->dev) {
      return InvalidArgument(fmt::format("targets {} and {} overlap (a disk and one of its partitions)", s->path, e.path));
    }
    return InvalidArgument(fmt::format("target {} is given twice (it is the same {} as {})", e.path,
                                       e.id && e.id->block_device ? "device" : "file", s->path));
  }
  return Status::Ok();
}

// A target that lands where an earlier one does, found before it is opened:
// the second open of a file (its write lock) or a device (O_EXCL) would
// otherwise say "in use" about this run itself. OK: go on and check it.
Result<std::unique_ptr<Entry>> RefuseGivenTwice(const std::vector<std::unique_ptr<Entry>>& seen,
                                                const std::string& path) {
  if (path == "-") return std::unique_ptr<Entry>();
  auto landing = LandingOf(io::ParseTargetSpec(path).path);
  if (!landing.ok()) return std::unique_ptr<Entry>();  // CheckOne says why
  Entry probe;
  static_cast<Landing&>(probe) = *landing;
  probe.path = path;
  FP_RETURN_IF_ERROR(RefuseDuplicate(seen, probe));
  return std::unique_ptr<Entry>();
}

// Whether target `e` would write over input `in`.
std::optional<std::string> Overwrites(const Entry& e, const InputFile& in) {
  if (!e.id) return std::nullopt;
  if (SameData(*e.id, in.id)) return fmt::format("target {} is {}", e.path, in.role);
  if (e.id->block_device && io::LoopBackingFile(e.id->dev) == in.id) {
    return fmt::format("target {} is a loop device over {}", e.path, in.role);
  }
  if (in.id.block_device && !e.id->block_device && io::LoopBackingFile(in.id.dev) == *e.id) {
    return fmt::format("target {} is the backing file of {}, a loop device", e.path, in.role);
  }
  // A file's st_dev is the device of its file system: writing that device
  // (--force past the mount) would change the file as it is read.
  if (e.id->block_device && !in.id.block_device && io::BlockDevicesOverlap(e.id->dev, in.id.dev)) {
    return fmt::format("target {} holds the file system that {} is on", e.path, in.role);
  }
  return std::nullopt;
}

}  // namespace

WriteTargets::WriteTargets() = default;
WriteTargets::WriteTargets(WriteTargets&&) noexcept = default;
WriteTargets& WriteTargets::operator=(WriteTargets&&) noexcept = default;
WriteTargets::~WriteTargets() = default;

WriteTargets WriteTargets::Check(const std::vector<std::string>& paths, const TargetPolicy& policy) {
  WriteTargets t;
  t.sysfs_root_ = policy.sysfs_root;
  t.open_card_ = policy.open_card;
  for (const std::string& path : paths) {
    auto checked = RefuseGivenTwice(t.entries_, path);
    if (checked.ok()) checked = CheckOne(path, policy);
    if (!checked.ok()) {
      auto e = std::make_unique<Entry>();
      e->path = path;
      (void)e->Fail(checked.status());
      t.entries_.push_back(std::move(e));
      continue;
    }
    std::unique_ptr<Entry> e = std::move(*checked);
    e->checked = true;
    (void)e->Fail(RefuseDuplicate(t.entries_, *e));
    t.entries_.push_back(std::move(e));
  }
  return t;
}

Status WriteTargets::status() const {
  for (const auto& e : entries_)
    if (!e->status.ok()) return e->status;
  return Status::Ok();
}

Status WriteTargets::RefuseInputs(const std::vector<InputFile>& inputs) {
  Status first;
  for (const auto& e : entries_) {
    for (const InputFile& in : inputs) {
      auto why = Overwrites(*e, in);
      if (!why) continue;
      Status s = e->Fail(InvalidArgument(*why + ": an input is never written over"));
      if (first.ok()) first = s;
      break;
    }
  }
  return first;
}

Status RefuseOtherOutput(const std::string& path, std::string_view role, const std::vector<std::string>& targets,
                         const std::vector<InputFile>& inputs) {
  FP_ASSIGN_OR_RETURN(Landing out, LandingOf(path));
  std::string name = path == "-" ? "stdout" : path;
  for (const std::string& t : targets) {
    FP_ASSIGN_OR_RETURN(Landing target, LandingOf(io::ParseTargetSpec(t).path));
    if (out.Overlaps(target)) return InvalidArgument(fmt::format("{} ({}) is also the target {}", name, role, t));
  }
  for (const InputFile& in : inputs) {
    if (out.Overlaps(in.id)) {
      return InvalidArgument(fmt::format("{} ({}) is {}: an input is never written over", name, role, in.role));
    }
  }
  return Status::Ok();
}

Status WriteTargets::CheckFits(std::optional<uint64_t> exact, uint64_t at_least) {
  if (exact && *exact == 0) return InvalidArgument("the image is empty (0 bytes); nothing written");
  uint64_t need = exact.value_or(at_least);
  constexpr uint64_t kLargestFile = INT64_MAX;  // off_t
  if (need > kLargestFile) {
    return NoSpace(fmt::format("image of {} bytes is larger than any file or device can be; nothing written", need));
  }
  Status first;
  for (const auto& e : entries_) {
    if (!e->bounded() || !e->checked) continue;
    Status s = e->Fail(input::CheckFits(need, e->target->window_size(), e->what(), /*lower_bound=*/!exact));
    if (first.ok()) first = s;
  }
  return first;
}

namespace {

Status PrepareTemp(Entry& e, std::optional<uint64_t> size) {
  FP_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(e.path));
  UniqueFd fd(::dup(file.fd()));
  if (!fd.valid()) return ErrnoError(fmt::format("{}: dup", file.temp_path()));
  e.temp = std::move(file);
  FP_ASSIGN_OR_RETURN(e.target, io::Target::Adopt(std::move(fd), e.path, {.truncate_to = size.value_or(0)}));
  e.size_unknown = !size;
  return Status::Ok();
}

// Completes one target: cut to size when its size was unknown, renamed
// over its path when it was written beside it.
Status CommitOne(Entry& e, uint64_t image_size) {
  if (e.size_unknown) {
    int fd = e.target->fd();
    if (::ftruncate(fd, static_cast<off_t>(image_size)) != 0 || (!e.temp && ::fdatasync(fd) != 0)) {
      return ErrnoError(fmt::format("{}: cannot set size to {}", e.path, image_size));
    }
  }
  if (e.temp) FP_RETURN_IF_ERROR(e.temp->Commit().WithContext(e.path));
  e.committed = true;
  return Status::Ok();
}

}  // namespace

Status WriteTargets::Prepare(std::optional<uint64_t> size) {
  // A write-protected eMMC boot area would fail part way: refused first.
  for (auto& e : entries_) {
    if (e->mode != Mode::kBlockDevice) continue;
    FP_RETURN_IF_ERROR(e->Fail(mmc::RefuseWriteProtectedBootArea(e->id->dev, sysfs_root_, open_card_)
                                   .WithContext(e->path)));
  }
  // Temporary files next: creating one may fail, and then nothing changed.
  for (auto& e : entries_) {
    if (e->mode != Mode::kNewFile) continue;
    FP_RETURN_IF_ERROR(e->Fail(PrepareTemp(*e, size)));
  }
  prepared_ = true;
  for (auto& e : entries_) {
    if (e->mode != Mode::kBlockDevice) continue;
    auto guard = mmc::ForceRoGuard::ReleaseDevice(e->id->dev, sysfs_root_);
    if (!guard.ok()) return e->Fail(guard.status().WithContext(e->path));
    e->force_ro = std::move(*guard);
  }
  for (auto& e : entries_) {
    if (e->mode != Mode::kInPlaceFile) continue;
    e->truncated = true;
    FP_RETURN_IF_ERROR(e->Fail(e->target->Truncate(size.value_or(0))));
    e->size_unknown = !size;
  }
  return Status::Ok();
}

Result<std::vector<io::Device>> WriteTargets::MakeDevices(io::Backend backend, unsigned depth) {
  std::vector<io::Device> devices;
  for (auto& e : entries_) {
    auto queue = e->target->MakeQueue(backend, depth);
    if (!queue.ok()) return e->Fail(queue.status());
    e->queue = std::move(*queue);
    io::Device d = io::DeviceFor(*e->target, e->queue.get());
    d.name = e->what();
    if (e->size_unknown) {
      d.geometry.size = kStreamWindow;
      d.window_size = kStreamWindow;
      d.reads_zero = true;
    }
    devices.push_back(d);
  }
  return devices;
}

uint64_t WriteTargets::BlockCapacity() const {
  uint64_t cap = 0;
  for (const auto& e : entries_) {
    if (e->bounded()) cap = cap ? std::min(cap, e->target->window_size()) : e->target->window_size();
  }
  return cap;
}

std::string WriteTargets::backend_name() const {
  return entries_.empty() || !entries_.front()->queue ? "" : std::string(entries_.front()->queue->name());
}

Status WriteTargets::Commit(uint64_t image_size, const std::vector<bool>& complete) {
  // One rename per target: each is old or new, never half of either.
  Status first;
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = *entries_[i];
    if (!complete.empty() && !complete[i]) continue;
    Status s = e.Fail(CommitOne(e, image_size));
    if (first.ok()) first = s;
  }
  return first;
}

void WriteTargets::Blame(size_t index, const Status& status) {
  if (index < entries_.size()) (void)entries_[index]->Fail(status);
}

std::vector<WriteTargets::Info> WriteTargets::Describe() const {
  std::vector<Info> out;
  for (const auto& e : entries_) {
    Info i{.path = e->path, .status = e->status, .truncated = e->truncated, .committed = e->committed};
    if (e->checked) {
      i.kind = e->mode == Mode::kBlockDevice ? TargetKind::kBlockDevice : e->id ? TargetKind::kFile : TargetKind::kNewFile;
      i.in_place = e->mode != Mode::kNewFile;
      i.prepared = prepared_ || e->temp.has_value();
      if (e->window) {
        i.partition = e->partition;
        i.window = e->window->range;
      }
    }
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<std::string> WriteTargets::in_place_names() const {
  std::vector<std::string> names;
  for (const auto& e : entries_) {
    if (prepared_ && e->mode != Mode::kNewFile) names.push_back(e->path);
  }
  return names;
}

bool WriteTargets::truncated_in_place() const {
  for (const auto& e : entries_)
    if (e->truncated) return true;
  return false;
}

}  // namespace flashpipe::input
