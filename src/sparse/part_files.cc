#include "sparse/part_files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "base/atomic_file.h"
#include "base/file_id.h"
#include "sparse/files.h"
#include "sparse/resparse.h"
#include "sparse/writer.h"

namespace flashpipe::sparse {
namespace {

constexpr std::string_view kTempMark = ".flashpipe-";

// N of "N" in canonical decimal (no sign, no leading zero), as PartPath
// writes it; nullopt for anything else.
std::optional<uint64_t> PartNumber(std::string_view s) {
  if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

struct Existing {
  std::vector<uint64_t> parts;  // PREFIX.N present, sorted
  std::vector<uint64_t> temps;  // N with a ".BASE.N.flashpipe-..." temp present
};

Result<Existing> ScanParts(const std::string& prefix) {
  const std::string dir = DirName(prefix);
  const std::string base = prefix.substr(prefix.rfind('/') + 1);  // npos + 1 == 0
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(fmt::format("open directory {}", dir));
  Existing found;
  const std::string part_start = base + ".", temp_start = "." + base + ".";
  while (const dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.starts_with(part_start)) {
      if (auto n = PartNumber(name.substr(part_start.size()))) found.parts.push_back(*n);
    } else if (name.starts_with(temp_start)) {
      std::string_view rest = name.substr(temp_start.size());
      size_t mark = rest.find(kTempMark);
      if (mark == std::string_view::npos) continue;
      if (auto n = PartNumber(rest.substr(0, mark))) found.temps.push_back(*n);
    }
  }
  ::closedir(d);
  std::sort(found.parts.begin(), found.parts.end());
  return found;
}

// Part `path` may be written: absent, a regular file that is not the input,
// or a link (a symlink or hard link planted there is replaced by the part,
// never written through: AtomicFile::InFolder).
Status CheckPart(const std::string& path, const InputFile& in) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return Status::Ok();
  FP_ASSIGN_OR_RETURN(bool regular, IsRegularOrAbsent(path));
  if (!regular) return InvalidArgument(fmt::format("{} is not a regular file: resparse writes its parts to files", path));
  FP_ASSIGN_OR_RETURN(std::optional<FileId> id, FileIdOfPath(path));
  if (!id) return Status::Ok();
  return RefuseInputAsOutput(*id, path, false, {&in, 1});
}

// A stale part may be removed: a regular file or a symlink (only the link
// goes), and not the input itself.
Status CheckStale(const std::string& path, const InputFile& in) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return ErrnoError(fmt::format("stat {}", path));
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    return InvalidArgument(fmt::format(
        "{} would be a stale part (this run makes fewer parts) but is not a regular file: refusing to remove it", path));
  }
  if (S_ISREG(st.st_mode) && FileIdOf(st) == in.id) {
    return InvalidArgument(fmt::format(
        "{} would be a stale part (this run makes fewer parts) but is the input {}: refusing to remove it", path,
        in.name));
  }
  return Status::Ok();
}

// Every check; returns the stale parts to remove.
Result<std::vector<std::string>> CheckNames(const std::string& prefix, size_t parts, const Existing& found,
                                            const InputFile& in) {
  for (size_t i = 0; i < parts; ++i) FP_RETURN_IF_ERROR(CheckPart(PartPath(prefix, i), in));
  std::vector<std::string> stale;
  for (uint64_t n : found.parts) {
    if (n < parts) continue;
    stale.push_back(PartPath(prefix, n));
    FP_RETURN_IF_ERROR(CheckStale(stale.back(), in));
  }
  return stale;
}

Status CheckPrefix(const std::string& prefix) {
  if (prefix.empty() || prefix.back() == '/') {
    return InvalidArgument(fmt::format("output prefix '{}' must end in a file name", prefix));
  }
  return Status::Ok();
}

Status WriteParts(const ResparsePlan& plan, const InputFile& in, const std::string& prefix,
                  std::vector<AtomicFile>* files) {
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    FP_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(PartPath(prefix, i), AtomicFile::InFolder()));
    FdOutput out(f.fd(), f.temp_path());
    FP_RETURN_IF_ERROR(WritePart(plan, i, in.fd.get(), in.name, &out));
    FP_RETURN_IF_ERROR(f.Sync());  // durable now, and no descriptor kept per part
    files->push_back(std::move(f));
  }
  return Status::Ok();
}

}  // namespace

std::string PartPath(const std::string& prefix, uint64_t index) { return fmt::format("{}.{}", prefix, index); }

Result<ResparseFilesResult> ResparseToFiles(const std::string& in_path, const std::string& prefix,
                                            uint64_t max_size) {
  FP_RETURN_IF_ERROR(CheckPrefix(prefix));
  FP_ASSIGN_OR_RETURN(InputFile in, OpenInput(in_path));
  return ResparseToFiles(in, prefix, max_size, nullptr);
}

Result<ResparseFilesResult> ResparseToFiles(const InputFile& in, const std::string& prefix, uint64_t max_size,
                                            const PartsCheck& before_commit) {
  FP_RETURN_IF_ERROR(CheckPrefix(prefix));
  if (!in.seekable) return InvalidArgument(fmt::format("{} must be a file: resparse reads it twice", in.name));
  FP_ASSIGN_OR_RETURN(ResparsePlan plan, PlanResparseFile(in.fd.get(), in.name, max_size));
  FP_ASSIGN_OR_RETURN(Existing found, ScanParts(prefix));
  FP_ASSIGN_OR_RETURN(std::vector<std::string> stale, CheckNames(prefix, plan.parts.size(), found, in));
  for (uint64_t n : found.temps) RemoveDeadTemps(PartPath(prefix, n));
  std::vector<AtomicFile> files;
  FP_RETURN_IF_ERROR(WriteParts(plan, in, prefix, &files));
  if (before_commit) {
    std::vector<std::string> temps;
    for (const AtomicFile& f : files) temps.push_back(f.temp_path());
    FP_RETURN_IF_ERROR(before_commit(temps));
  }
  FP_RETURN_IF_ERROR(AtomicFile::CommitTogether(files, stale));
  return ResparseFilesResult{plan.parts.size(), std::move(stale)};
}

}  // namespace flashpipe::sparse
