#include "output/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "base/write_lock.h"

namespace flashpipe::output {

Status NotTheSource(const std::string& path, const FileId& source, std::string_view what) {
  FP_ASSIGN_OR_RETURN(std::optional<FileId> id, FileIdOfPath(path));
  if (id && *id == source) return InvalidArgument(fmt::format("the {} {} is the source itself", what, path));
  return Status::Ok();
}

Result<OutputFile> OutputFile::Check(const std::string& path, const FileId& source, std::string_view what,
                                     bool text) {
  OutputFile out;
  out.path_ = path;
  out.name_ = path == "-" ? "stdout" : path;
  if (path == "-") {
    FP_ASSIGN_OR_RETURN(FileId id, FileIdOfFd(STDOUT_FILENO, "stdout"));
    if (id == source) return InvalidArgument(fmt::format("the {} (stdout) is the source itself", what));
    if (!text && ::isatty(STDOUT_FILENO)) {
      return InvalidArgument(fmt::format("refusing to write the {} to a terminal: redirect stdout or name a file", what));
    }
    out.stream_ = STDOUT_FILENO;
    return out;
  }
  FP_RETURN_IF_ERROR(NotTheSource(path, source, what));
  FP_ASSIGN_OR_RETURN(out.regular_, IsRegularOrAbsent(path));
  if (out.regular_) return out;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(fmt::format("stat {}", path));
  if (S_ISBLK(st.st_mode)) {
    return InvalidArgument(fmt::format("the {} {} is a block device: to copy an image onto a device, use "
                                       "flashpipe write IMAGE {}", what, path, path));
  }
  return out;
}

Status OutputFile::Open() {
  if (path_ == "-") return Status::Ok();
  if (regular_) {
    FP_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(path_));
    file_.emplace(std::move(f));
    return Status::Ok();
  }
  owned_ = UniqueFd(::open(path_.c_str(), O_WRONLY | O_CLOEXEC));
  if (!owned_.valid()) return ErrnoError(fmt::format("cannot open {}", path_));
  FP_RETURN_IF_ERROR(LockForWriting(owned_.get(), path_));  // a device another run writes
  stream_ = owned_.get();
  return Status::Ok();
}

Status OutputFile::Commit() {
  if (file_) return file_->Commit();
  if (owned_.valid() && owned_.Close() != 0) return ErrnoError(fmt::format("close {}", path_));
  return Status::Ok();
}

Result<UniqueFd> AnonymousFileBeside(const std::string& path) {
  std::string tmpl = DirName(path) + "/.flashpipe-read-XXXXXX";
  UniqueFd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("create a temporary file in {}", DirName(path)));
  ::unlink(tmpl.c_str());
  return fd;
}

}  // namespace flashpipe::output
