// AtomicFile: an output file that appears whole or not at all.
//
// Every tool that creates a file (img2simg, simg2img, append2simg, resparse,
// `write` to a regular file, the daemon's state file, ...) writes it through
// an AtomicFile: a temporary file beside the final path, created with
// O_EXCL|O_NOFOLLOW (never follows a planted symlink, never reuses a name),
// filled by the caller, then Commit(): fsync, the final mode, rename over the
// final path, fsync of the directory. Anything short of Commit (an error, a
// return, a crash) leaves the old output, or none, in place: the destructor
// removes the temporary file, and a run killed by a signal leaves one named
// ".NAME.flashpipe-PID-XXXXXX" that the next AtomicFile for the same output
// removes (when process PID is gone).
//
// Three policies for a symlink at the path (Options::symlink):
//   kFollow   (default) a path the user named as the output is written
//             through, as AOSP's tools do: the link's target is replaced,
//             the link stays.
//   kRefuse   a path in a directory others can write (the daemon's state
//             file in /tmp): a symlink there is an error, never followed.
//   kReplace  a name the tool makes inside a folder it was given (lp
//             unpack's NAME.img, resparse's and read's PREFIX.N parts): a
//             link planted there is replaced by the new file, never written
//             through, as a hard link planted there is.
// Except with kFollow the temporary file and the rename stay in the path's
// own directory; rename(2) replaces a link at the name, it does not follow
// it, so a link planted between Create and Commit is replaced too. An
// existing regular file keeps its permission bits; a new one gets
// 0666 & ~umask (or `new_mode` & ~umask).
//
// Only for regular files: the caller writes block devices, character devices
// and pipes in place (IsRegularOrAbsent tells which).
//
//   FP_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path));
//   FP_RETURN_IF_ERROR(WriteAll(out.fd(), data, out.temp_path()));
//   FP_RETURN_IF_ERROR(out.Commit());
//
// Thread-compatible. Movable, not copyable.
#pragma once

#include <sys/types.h>

#include <span>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe {

class AtomicFile {
 public:
  struct Options {
    mode_t new_mode = 0666;      // for a new file, before the umask
    bool keep_existing_mode = true;
    bool cleanup_stale = true;   // remove temps of dead runs for this output
    enum class Symlink { kFollow, kRefuse, kReplace };
    Symlink symlink = Symlink::kFollow;  // see above
    // Hold an exclusive lock (base/write_lock.h) on the existing file until
    // Commit or Abort: a second writer of the same output (another run, a
    // `serve` writing it) is refused instead of both reporting success.
    bool lock_existing = true;
  };

  // The options for a name made inside a folder the tool was given.
  static Options InFolder() {
    Options o;
    o.symlink = Options::Symlink::kReplace;
    o.lock_existing = false;  // many parts: no descriptor kept per part
    return o;
  }

  static Result<AtomicFile> Create(const std::string& path, const Options& options);
  static Result<AtomicFile> Create(const std::string& path) { return Create(path, Options()); }

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // Abort() unless committed

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }          // as the user gave it
  const std::string& final_path() const { return final_; }   // after following symlinks
  const std::string& temp_path() const { return temp_; }

  // fsync, chmod, rename over final_path(), fsync of its directory.
  // Closes the descriptor. After an error the temporary file is removed.
  Status Commit();
  // chmod, fsync and close the temporary file, without renaming it: a caller
  // with many outputs makes each durable as soon as it is complete and keeps
  // no descriptor open. Afterwards fd() is -1; Commit() renames.
  Status Sync();
  // Removes the temporary file (idempotent).
  void Abort();

  // Commits a set of outputs that only make sense together (resparse's
  // parts), as far as a directory allows. Each is synced first; if one
  // fails nothing changes. Then, with SIGINT, SIGTERM, SIGHUP and SIGQUIT
  // held: the existing file of files[0], then those of the others, then each
  // path in `remove` are renamed aside (a symlink in `remove` goes, not its
  // target), and the files are renamed into place in reverse order, files[0]
  // last; the old files are unlinked after that. So files[0] is present only
  // when the whole new set is: a SIGKILL or a power cut in the middle (a
  // window of a few renames) leaves no files[0] and, of the rest, only old
  // files or only new ones; the old files moved aside are temps of a dead
  // run for the next AtomicFile. Then each directory involved is synced once.
  static Status CommitTogether(std::span<AtomicFile> files, std::span<const std::string> remove);

 private:
  AtomicFile() = default;
  UniqueFd fd_;
  UniqueFd lock_;  // the existing output, locked (Options::lock_existing)
  std::string path_, final_, temp_;
  Status Rename();
  mode_t mode_ = 0644;
  bool synced_ = false;
  bool done_ = true;
};

// Removes the temporary files that AtomicFile::Create(path) would leave if
// killed, for every run whose process is gone (Create does this itself;
// for outputs that are no longer written, such as stale resparse parts).
void RemoveDeadTemps(const std::string& path);

// Whether `path` is a regular file or does not exist yet (so an output there
// goes through AtomicFile); false for block/character devices, fifos,
// sockets; directories are an error.
Result<bool> IsRegularOrAbsent(const std::string& path);

// The path a write through `path` replaces: symlinks followed to the last
// link's target, which may not exist yet. Relative targets are taken from the
// link's directory.
Result<std::string> FollowSymlinks(std::string path);

// The directory part of a path ("." when it has none), and the rest.
std::string DirName(const std::string& path);
std::string BaseName(const std::string& path);
// fsync of a directory, so a rename in it is durable.
Status SyncDirectory(const std::string& dir);

}  // namespace flashpipe
