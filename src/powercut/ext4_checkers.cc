#include "powercut/ext4_checkers.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/fd_io.h"
#include "base/sha256.h"
#include "base/unique_fd.h"
#include "fastboot/state.h"
#include "powercut/tool_run.h"

namespace flashpipe::powercut {
namespace {

Status WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return ErrnoError(fmt::format("create {}", path));
  return WriteAll(fd.get(), bytes, path);
}

std::string Digest(std::span<const uint8_t> bytes) {
  Sha256 h;
  h.Update(bytes);
  return fmt::format("sha256 {}, {} bytes", Sha256::Hex(h.Final()).substr(0, 16), bytes.size());
}

std::string LastLine(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool NotFoundByDebugfs(const std::string& output) { return output.find("not found by ext2_lookup") != std::string::npos; }

}  // namespace

Status CheckImagePath(const std::string& path) {
  if (path.empty() || path[0] != '/') return InvalidArgument(fmt::format("'{}' is not an absolute path", path));
  for (char c : path) {
    if (c <= ' ' || c == '"' || c == '\'' || c == '\\' || c > '~') {
      return InvalidArgument(fmt::format("path '{}': only printable characters without spaces or quotes", path));
    }
  }
  return Status::Ok();
}

Result<std::shared_ptr<Ext4Scratch>> Ext4Scratch::Create() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = fmt::format("{}/flashpipe-powercut-XXXXXX", tmp != nullptr && *tmp ? tmp : "/tmp");
  if (::mkdtemp(templ.data()) == nullptr) return ErrnoError(fmt::format("mkdtemp {}", templ));
  return std::shared_ptr<Ext4Scratch>(new Ext4Scratch(templ));
}

Ext4Scratch::~Ext4Scratch() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

Result<std::optional<Reading>> Ext4Scratch::Load(std::span<const uint8_t> device) {
  Sha256 h;
  h.Update(device);
  const auto digest = h.Final();
  if (loaded_ == digest) return loaded_broken_;
  loaded_.reset();
  dumped_.clear();
  FP_RETURN_IF_ERROR(WriteFile(image(), device));
  FP_ASSIGN_OR_RETURN(ToolResult r, RunTool({"e2fsck", "-fy", image()}));
  loaded_broken_.reset();
  if (r.exit_code >= 4) {
    loaded_broken_ = Reading{fmt::format("e2fsck could not repair the file system (exit {}: {})", r.exit_code,
                                         LastLine(r.output))};
  }
  loaded_ = digest;
  return loaded_broken_;
}

Result<std::optional<std::string>> Ext4Scratch::Dumped(const std::string& dir) {
  FP_RETURN_IF_ERROR(CheckImagePath(dir));
  if (auto it = dumped_.find(dir); it != dumped_.end()) return it->second;
  const std::string dest = fmt::format("{}/dump{}", dir_, dumped_.size());
  std::error_code ec;
  std::filesystem::remove_all(dest, ec);
  if (::mkdir(dest.c_str(), 0700) != 0) return ErrnoError(fmt::format("mkdir {}", dest));
  FP_ASSIGN_OR_RETURN(ToolResult r, RunTool({"debugfs", "-R", fmt::format("rdump {} {}", dir, dest), image()}));
  std::optional<std::string> out;
  const std::string copy = dir == "/" ? dest : dest + "/" + BaseName(dir);
  if (IsDirectory(copy)) {
    out = copy;
  } else if (!NotFoundByDebugfs(r.output)) {
    return Internal(fmt::format("debugfs rdump {}: {}", dir, LastLine(r.output)));
  }
  dumped_.emplace(dir, out);
  return out;
}

Result<std::optional<std::vector<uint8_t>>> Ext4Scratch::ReadFile(const std::string& path) {
  FP_RETURN_IF_ERROR(CheckImagePath(path));
  FP_ASSIGN_OR_RETURN(std::optional<std::string> dir, Dumped(DirName(path)));
  const std::string copy = dir ? *dir + "/" + BaseName(path) : "";
  struct stat st;
  if (!dir || ::lstat(copy.c_str(), &st) != 0) return std::optional<std::vector<uint8_t>>();
  if (!S_ISREG(st.st_mode)) return Internal(fmt::format("{} in the image is not a regular file", path));
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(copy));
  return std::optional<std::vector<uint8_t>>(std::move(bytes));
}

Result<std::vector<std::string>> Ext4Scratch::List(const std::string& dir) {
  FP_ASSIGN_OR_RETURN(std::optional<std::string> copy, Dumped(dir));
  std::vector<std::string> names;
  if (!copy) return names;
  for (const auto& e : std::filesystem::directory_iterator(*copy)) names.push_back(e.path().filename().string());
  return names;
}

Result<Reading> Ext4Checker::Read(std::span<const uint8_t> device) {
  FP_ASSIGN_OR_RETURN(std::optional<Reading> broken, scratch_->Load(device));
  if (broken) return *broken;
  return ReadLoaded(*scratch_);
}

namespace {

Result<std::shared_ptr<Ext4Scratch>> OrNew(std::shared_ptr<Ext4Scratch> fs) {
  if (fs) return fs;
  return Ext4Scratch::Create();
}

}  // namespace

Result<std::unique_ptr<StateFileChecker>> StateFileChecker::Create(std::string path, std::shared_ptr<Ext4Scratch> fs) {
  FP_RETURN_IF_ERROR(CheckImagePath(path));
  FP_ASSIGN_OR_RETURN(std::shared_ptr<Ext4Scratch> s, OrNew(std::move(fs)));
  return std::unique_ptr<StateFileChecker>(new StateFileChecker(std::move(s), std::move(path)));
}

Result<Reading> StateFileChecker::ReadLoaded(Ext4Scratch& fs) {
  FP_ASSIGN_OR_RETURN(auto content, fs.ReadFile(path_));
  return ReadContent(content);
}

Result<Reading> StateFileChecker::ReadSnapshot(const std::string& path) {
  if (path == "absent") return ReadContent(std::nullopt);
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(path));
  return ReadContent(bytes);
}

// In a directory of its own, as the daemon would find it at start.
Result<Reading> StateFileChecker::ReadContent(const std::optional<std::vector<uint8_t>>& content) {
  const std::string dir = scratch_->dir() + "/state";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (::mkdir(dir.c_str(), 0700) != 0) return ErrnoError(fmt::format("mkdir {}", dir));
  const std::string file = dir + "/state";
  if (content) FP_RETURN_IF_ERROR(WriteFile(file, *content));
  FP_ASSIGN_OR_RETURN(fastboot::PersistentState st, fastboot::PersistentState::Open(file));
  Reading r{st.Describe()};
  if (st.first_start()) r.text += " (no state file: a first start)";
  r.fail_closed = !st.first_start() && !st.warnings().empty();
  return r;
}

Result<std::unique_ptr<FileChecker>> FileChecker::Create(std::string path, std::shared_ptr<Ext4Scratch> fs) {
  FP_RETURN_IF_ERROR(CheckImagePath(path));
  FP_ASSIGN_OR_RETURN(std::shared_ptr<Ext4Scratch> s, OrNew(std::move(fs)));
  return std::unique_ptr<FileChecker>(new FileChecker(std::move(s), std::move(path)));
}

Reading FileChecker::ReadContent(const std::optional<std::vector<uint8_t>>& content) {
  return Reading{content ? Digest(*content) : "absent"};
}

Result<Reading> FileChecker::ReadLoaded(Ext4Scratch& fs) {
  FP_ASSIGN_OR_RETURN(auto content, fs.ReadFile(path_));
  return ReadContent(content);
}

Result<Reading> FileChecker::ReadSnapshot(const std::string& path) {
  if (path == "absent") return ReadContent(std::nullopt);
  std::string file = path;
  if (IsDirectory(path)) {
    file = path + "/" + BaseName(path_);
    if (::access(file.c_str(), F_OK) != 0) return ReadContent(std::nullopt);
  }
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(file));
  return ReadContent(bytes);
}

Result<std::unique_ptr<PartSetChecker>> PartSetChecker::Create(std::string prefix, std::shared_ptr<Ext4Scratch> fs) {
  FP_RETURN_IF_ERROR(CheckImagePath(prefix));
  FP_ASSIGN_OR_RETURN(std::shared_ptr<Ext4Scratch> s, OrNew(std::move(fs)));
  return std::unique_ptr<PartSetChecker>(new PartSetChecker(std::move(s), std::move(prefix)));
}

std::optional<uint64_t> PartSetChecker::PartNumber(const std::string& name) const {
  const std::string base = BaseName(prefix_) + ".";
  if (!name.starts_with(base) || name.size() == base.size() || name.size() > base.size() + 6) return std::nullopt;
  uint64_t n = 0;
  for (char c : std::string_view(name).substr(base.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

Reading PartSetChecker::ReadParts(const std::map<uint64_t, std::vector<uint8_t>>& parts) const {
  if (parts.empty()) return Reading{"absent"};
  std::string s;
  for (const auto& [n, bytes] : parts) s += fmt::format("{}{}: {}", s.empty() ? "" : "; ", n, Digest(bytes));
  if (!parts.contains(0)) return Reading{fmt::format("no {}.0, an incomplete set ({})", BaseName(prefix_), s), true};
  return Reading{s};
}

Result<Reading> PartSetChecker::ReadLoaded(Ext4Scratch& fs) {
  FP_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.List(DirName(prefix_)));
  std::map<uint64_t, std::vector<uint8_t>> parts;
  for (const auto& name : names) {
    auto n = PartNumber(name);
    if (!n) continue;
    FP_ASSIGN_OR_RETURN(auto content, fs.ReadFile(DirName(prefix_) + "/" + name));
    if (content) parts[*n] = std::move(*content);
  }
  return ReadParts(parts);
}

Result<Reading> PartSetChecker::ReadSnapshot(const std::string& path) {
  std::map<uint64_t, std::vector<uint8_t>> parts;
  if (path == "absent") return ReadParts(parts);
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return ErrnoError(fmt::format("snapshot directory {}", path));
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  for (const auto& name : names) {
    auto n = PartNumber(name);
    if (!n) continue;
    FP_ASSIGN_OR_RETURN(parts[*n], ReadWholeFile(path + "/" + name));
  }
  return ReadParts(parts);
}

}  // namespace flashpipe::powercut
