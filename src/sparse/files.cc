#include "sparse/files.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/write_lock.h"

namespace flashpipe::sparse {
namespace {

UniqueFd DupCloexec(int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

bool KeepsData(const struct stat& st) { return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode); }

Result<uint64_t> DeviceSize(int fd, const std::string& name) {
  uint64_t size = 0;
  if (::ioctl(fd, BLKGETSIZE64, &size) != 0) return ErrnoError(fmt::format("size of {}", name));
  return size;
}

}  // namespace

Result<InputFile> OpenInput(const std::string& path) {
  InputFile in;
  in.path = path;
  in.name = path == "-" ? "stdin" : path;
  in.fd = path == "-" ? DupCloexec(STDIN_FILENO) : UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.fd.valid()) return ErrnoError(fmt::format("open {}", in.name));
  struct stat st;
  if (::fstat(in.fd.get(), &st) != 0) return ErrnoError(fmt::format("stat {}", in.name));
  if (S_ISDIR(st.st_mode)) return IoError(fmt::format("{} is a directory", in.name), EISDIR);
  in.id = FileIdOf(st);
  in.holds_data = KeepsData(st);
  if (in.holds_data) {
    off_t pos = ::lseek(in.fd.get(), 0, SEEK_CUR);
    off_t end = ::lseek(in.fd.get(), 0, SEEK_END);
    if (pos >= 0 && end >= pos && ::lseek(in.fd.get(), pos, SEEK_SET) == pos) {
      in.seekable = true;
      in.start = static_cast<uint64_t>(pos);
      in.size = static_cast<uint64_t>(end);
    }
  }
  return in;
}

Status RefuseInputAsOutput(const FileId& output, const std::string& output_name, bool output_now_empty,
                           std::span<const InputFile> inputs) {
  for (const InputFile& in : inputs) {
    if (!in.holds_data || !(in.id == output)) continue;
    std::string msg =
        fmt::format("output {} is the same file as input {}: refusing to overwrite an input", output_name, in.name);
    if (output_now_empty) msg += " (the shell's redirection has already emptied it)";
    return InvalidArgument(std::move(msg));
  }
  return Status::Ok();
}

Result<OutputFile> OutputFile::Check(const std::string& path, std::span<const InputFile> inputs) {
  OutputFile out;
  out.path_ = path;
  out.name_ = path == "-" ? "stdout" : path;
  struct stat st;
  if (path == "-") {
    if (::fstat(STDOUT_FILENO, &st) != 0) return ErrnoError("stat stdout");
    bool emptied = S_ISREG(st.st_mode) && st.st_size == 0;
    FP_RETURN_IF_ERROR(RefuseInputAsOutput(FileIdOf(st), out.name_, emptied, inputs));
    int flags = ::fcntl(STDOUT_FILENO, F_GETFL);
    out.kind_ = S_ISBLK(st.st_mode) ? Kind::kDevice : Kind::kStream;
    out.keeps_data_ = KeepsData(st);
    out.seekable_ = out.keeps_data_ && flags >= 0 && (flags & O_APPEND) == 0;
    out.fd_ = DupCloexec(STDOUT_FILENO);
    if (!out.fd_.valid()) return ErrnoError("duplicate stdout");
    if (out.kind_ == Kind::kDevice) {
      FP_ASSIGN_OR_RETURN(out.device_size_, DeviceSize(out.fd_.get(), out.name_));
    }
    return out;
  }
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError(fmt::format("stat {}", path));
    out.kind_ = Kind::kFile;  // a new file (perhaps behind a dangling symlink)
    out.seekable_ = out.keeps_data_ = true;
    return out;
  }
  if (S_ISDIR(st.st_mode)) return IoError(fmt::format("{} is a directory", path), EISDIR);
  FP_RETURN_IF_ERROR(RefuseInputAsOutput(FileIdOf(st), out.name_, false, inputs));
  out.keeps_data_ = out.seekable_ = KeepsData(st);
  if (S_ISREG(st.st_mode)) {
    out.kind_ = Kind::kFile;
  } else if (S_ISBLK(st.st_mode)) {
    out.kind_ = Kind::kDevice;
    out.fd_ = UniqueFd(::open(path.c_str(), O_WRONLY | O_EXCL | O_CLOEXEC));
    if (!out.fd_.valid() && errno == EBUSY) {
      return Busy(fmt::format("{} is in use (mounted, or opened exclusively by another program)", path));
    }
    if (!out.fd_.valid()) return ErrnoError(fmt::format("open {}", path));
    FP_RETURN_IF_ERROR(LockForWriting(out.fd_.get(), path));
    FP_ASSIGN_OR_RETURN(out.device_size_, DeviceSize(out.fd_.get(), path));
  } else {
    out.kind_ = Kind::kStream;  // opened by Open(): a fifo waits there for its reader
  }
  return out;
}

Status OutputFile::Open() {
  if (kind_ == Kind::kFile) {
    if (file_) return Status::Ok();
    FP_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(path_));
    file_.emplace(std::move(f));
    return Status::Ok();
  }
  if (fd_.valid()) return Status::Ok();
  fd_ = UniqueFd(::open(path_.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd_.valid()) return ErrnoError(fmt::format("open {}", path_));
  return Status::Ok();
}

int OutputFile::fd() const { return file_ ? file_->fd() : fd_.get(); }

Status OutputFile::Commit() {
  if (kind_ == Kind::kFile) {
    if (!file_) return Internal(fmt::format("{}: commit of an output that was not opened", name_));
    return file_->Commit();
  }
  if (keeps_data_ && ::fsync(fd_.get()) != 0) return ErrnoError(fmt::format("fsync {}", name_));
  if (fd_.Close() != 0) return ErrnoError(fmt::format("close {}", name_));
  return Status::Ok();
}

}  // namespace flashpipe::sparse
