// Checkers that read files from an ext4 image after a cut (checker.h), the
// way the next boot finds them: the image written to a scratch directory,
// `e2fsck -fy` (the journal replayed, anything else repaired; a file system
// it cannot repair reads as such), then the files read with `debugfs` -- no
// mount, no root, no loop device.
//   StateFileChecker  serve's state file, read by PersistentState::Open as
//                     the daemon reads it at start (a missing file is a first
//                     start; an empty, torn or unknown one reads locked,
//                     which is fail-closed).
//   FileChecker       one file: absent, or its SHA-256 and size.
//   PartSetChecker    resparse's parts PREFIX.0, PREFIX.1, ...: absent, each
//                     part's digest, or "no PREFIX.0" (fail-closed: a set
//                     that does not look complete).
// Snapshots are the files themselves as the run copied them, or a directory
// holding them under their own names (a copy of the output directory), or
// "absent". Checkers of one file system share one Ext4Scratch, which checks
// each distinct image once.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "powercut/checker.h"

namespace flashpipe::powercut {

// A scratch directory under $TMPDIR holding one image at a time.
class Ext4Scratch {
 public:
  static Result<std::shared_ptr<Ext4Scratch>> Create();
  Ext4Scratch(const Ext4Scratch&) = delete;
  Ext4Scratch& operator=(const Ext4Scratch&) = delete;
  ~Ext4Scratch();
  const std::string& dir() const { return dir_; }

  // Writes the image and checks it, unless it is the one loaded already; a
  // Reading when e2fsck could not repair it.
  Result<std::optional<Reading>> Load(std::span<const uint8_t> device);
  // A file of the loaded image; nullopt when there is none. Read from a
  // copy of its directory, which one debugfs rdump makes per image.
  Result<std::optional<std::vector<uint8_t>>> ReadFile(const std::string& path);
  // The names in a directory of the loaded image (not . and ..).
  Result<std::vector<std::string>> List(const std::string& dir);

 private:
  explicit Ext4Scratch(std::string dir) : dir_(std::move(dir)) {}
  std::string image() const { return dir_ + "/fs.img"; }
  std::string dir_;
  // The host path of a copy of `dir` of the loaded image; nullopt when the
  // image has no such directory.
  Result<std::optional<std::string>> Dumped(const std::string& dir);
  std::optional<std::array<uint8_t, 32>> loaded_;  // SHA-256 of the image in place
  std::optional<Reading> loaded_broken_;
  std::map<std::string, std::optional<std::string>> dumped_;  // of the loaded image
};

// An absolute path without spaces or quotes (debugfs takes one command line).
Status CheckImagePath(const std::string& path);

class Ext4Checker : public Checker {
 public:
  Result<Reading> Read(std::span<const uint8_t> device) final;

 protected:
  explicit Ext4Checker(std::shared_ptr<Ext4Scratch> scratch) : scratch_(std::move(scratch)) {}
  virtual Result<Reading> ReadLoaded(Ext4Scratch& fs) = 0;
  std::shared_ptr<Ext4Scratch> scratch_;
};

class StateFileChecker final : public Ext4Checker {
 public:
  static Result<std::unique_ptr<StateFileChecker>> Create(std::string path, std::shared_ptr<Ext4Scratch> fs = nullptr);
  std::string_view name() const override { return "state-file"; }
  Result<Reading> ReadSnapshot(const std::string& path) override;
  bool fail_closed_ok() const override { return true; }
  // What the daemon makes of this content (nullopt: no file).
  Result<Reading> ReadContent(const std::optional<std::vector<uint8_t>>& content);

 private:
  StateFileChecker(std::shared_ptr<Ext4Scratch> s, std::string path) : Ext4Checker(std::move(s)), path_(std::move(path)) {}
  Result<Reading> ReadLoaded(Ext4Scratch& fs) override;
  std::string path_;
};

class FileChecker final : public Ext4Checker {
 public:
  static Result<std::unique_ptr<FileChecker>> Create(std::string path, std::shared_ptr<Ext4Scratch> fs = nullptr);
  std::string_view name() const override { return name_; }
  Result<Reading> ReadSnapshot(const std::string& path) override;
  static Reading ReadContent(const std::optional<std::vector<uint8_t>>& content);

 private:
  FileChecker(std::shared_ptr<Ext4Scratch> s, std::string path)
      : Ext4Checker(std::move(s)), path_(std::move(path)), name_("file " + path_) {}
  Result<Reading> ReadLoaded(Ext4Scratch& fs) override;
  std::string path_, name_;
};

class PartSetChecker final : public Ext4Checker {
 public:
  static Result<std::unique_ptr<PartSetChecker>> Create(std::string prefix, std::shared_ptr<Ext4Scratch> fs = nullptr);
  std::string_view name() const override { return name_; }
  Result<Reading> ReadSnapshot(const std::string& path) override;
  bool fail_closed_ok() const override { return true; }
  // Parts by number.
  Reading ReadParts(const std::map<uint64_t, std::vector<uint8_t>>& parts) const;

 private:
  PartSetChecker(std::shared_ptr<Ext4Scratch> s, std::string prefix)
      : Ext4Checker(std::move(s)), prefix_(std::move(prefix)), name_("parts " + prefix_) {}
  Result<Reading> ReadLoaded(Ext4Scratch& fs) override;
  // The part number of a name PREFIX_BASE.N, if it is one.
  std::optional<uint64_t> PartNumber(const std::string& name) const;
  std::string prefix_, name_;
};

}  // namespace flashpipe::powercut
