// OutputFile: where one output of the read path goes, checked (Check)
// before it, or anything else, is created (Open). A regular file (or a name that does not exist yet) is written
// through an AtomicFile: a temp file beside it, renamed over it by Commit()
// after fsync, removed by anything short of that. "-" (stdout), a fifo or a
// character device (/dev/null) is a stream written in place. Refused: the
// source itself (same device and inode, through any name, "-" included), a
// block device (copying onto a device is `flashpipe write`'s job), a
// directory, and a terminal as stdout.
#pragma once

#include <optional>
#include <string>

#include "base/atomic_file.h"
#include "base/file_id.h"
#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::output {

class OutputFile {
 public:
  // Every check, nothing created yet. `what` names the output in errors
  // ("output", "bmap"). A terminal as stdout is refused unless `text` (a bmap
  // may be shown there).
  static Result<OutputFile> Check(const std::string& path, const FileId& source, std::string_view what,
                                  bool text = false);
  // Creates the temp file (regular files) or opens the stream.
  Status Open();

  int fd() const { return file_ ? file_->fd() : stream_; }
  bool regular() const { return regular_; }
  const std::string& name() const { return name_; }  // the path, or "stdout"
  const std::string& path() const { return path_; }
  // Regular files: fsync and rename into place. Streams: nothing to do.
  Status Commit();

 private:
  std::string path_, name_;
  bool regular_ = false;
  std::optional<AtomicFile> file_;
  UniqueFd owned_;
  int stream_ = -1;
};

// A file with no name in `path`'s directory (removed when closed), for
// bytes that are only an intermediate step on the way there.
Result<UniqueFd> AnonymousFileBeside(const std::string& path);

// Refuses `path` when it names the source (FileId equal), for outputs whose
// names are only known later (sparse parts).
Status NotTheSource(const std::string& path, const FileId& source, std::string_view what);

}  // namespace flashpipe::output
