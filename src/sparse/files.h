// The files the sparse tools (img2simg, simg2img, append2simg, resparse)
// read and write, and the checks that come before anything is created.
//
// InputFile is a path, or "-" for stdin, opened for reading, with the
// identity of the file behind it (device and inode), so that an output can be
// refused when it is an input: through symlinks, hard links, "-" and
// /dev/fd/N alike.
//
// OutputFile is where a tool writes, in one of three ways:
//   kFile    a regular file, or a path that does not exist yet: through an
//            AtomicFile (a temp file beside it, renamed over it by Commit; a
//            symlink is written through and stays, an existing file keeps
//            its mode). A failure or a kill never leaves a partial output.
//   kDevice  a block device, in place: opened O_EXCL (refused while mounted
//            or in use), its size known before anything is written.
//   kStream  "-" (stdout), a character device, a fifo or a socket: in
//            place, in order. A regular file behind stdout is written in
//            place too (the shell has created or truncated it already).
// Check() opens and inspects the output but creates and changes nothing; it
// refuses an output that is one of the inputs. Only files that keep data
// (regular files and block devices) are compared: a pipe or a socket that is
// both stdin and stdout (inetd, socat) carries two separate streams.
//
//   FP_ASSIGN_OR_RETURN(InputFile in, OpenInput(path));
//   FP_ASSIGN_OR_RETURN(OutputFile out, OutputFile::Check(out_path, {&in, 1}));
//   ... every other check ...
//   FP_RETURN_IF_ERROR(out.Open());
//   ... write to out.fd() ...
//   FP_RETURN_IF_ERROR(out.Commit());
//
// Thread-compatible. Movable, not copyable.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/file_id.h"
#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::sparse {

struct InputFile {
  std::string path;  // as given; "-" for stdin
  std::string name;  // for messages: the path, or "stdin"
  UniqueFd fd;
  FileId id;
  bool holds_data = false;  // a regular file or a block device
  bool seekable = false;    // the same: pread works, the size is known
  uint64_t start = 0;       // seekable: the descriptor's position when opened
  uint64_t size = 0;        // seekable: bytes in the file (or the device)
  std::vector<uint8_t> head;  // bytes already read from a stream (see ReadHeader)
};

// Opens `path` ("-": a duplicate of stdin) for reading. A directory is an
// error.
Result<InputFile> OpenInput(const std::string& path);

// An error when `output` (named `output_name`) is the same file as one of
// `inputs`; `output_now_empty` adds that a shell redirection has already
// emptied it.
Status RefuseInputAsOutput(const FileId& output, const std::string& output_name, bool output_now_empty,
                           std::span<const InputFile> inputs);

class OutputFile {
 public:
  enum class Kind { kFile, kDevice, kStream };

  // See the file comment. `path` "-" is stdout.
  static Result<OutputFile> Check(const std::string& path, std::span<const InputFile> inputs);

  OutputFile(OutputFile&&) noexcept = default;
  OutputFile& operator=(OutputFile&&) noexcept = default;

  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }  // the path, or "stdout"
  // Whether bytes already written can be rewritten (pwrite): every kFile
  // and kDevice, and a stdout that is a regular file or a block device
  // opened without O_APPEND.
  bool seekable() const { return seekable_; }
  uint64_t device_size() const { return device_size_; }  // kDevice

  // Creates the temp file (kFile) or opens the stream; idempotent.
  Status Open();
  int fd() const;  // REQUIRES: Open() succeeded
  // kFile: fsync, rename over the output (AtomicFile::Commit). In place:
  // fsync when the output keeps data, close.
  Status Commit();

 private:
  OutputFile() = default;
  std::string path_, name_;
  Kind kind_ = Kind::kFile;
  bool seekable_ = false;
  bool keeps_data_ = false;
  uint64_t device_size_ = 0;
  UniqueFd fd_;                     // kDevice (opened by Check) and kStream
  std::optional<AtomicFile> file_;  // kFile, after Open()
};

}  // namespace flashpipe::sparse
