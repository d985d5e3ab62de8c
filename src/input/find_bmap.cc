#include "input/find_bmap.h"

#include <sys/stat.h>

#include "base/file_id.h"

namespace flashpipe::input {
namespace {

// `path` without its last extension, or nullopt when its file name has none.
std::optional<std::string> StripExtension(const std::string& path) {
  size_t base = path.rfind('/');
  base = base == std::string::npos ? 0 : base + 1;
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || dot < base) return std::nullopt;
  if (path.find_first_not_of('.', base) >= dot) return std::nullopt;  // ".img", "..": no stem before the dot
  return path.substr(0, dot);
}

}  // namespace

std::vector<std::string> BmapCandidates(const std::string& image) {
  std::vector<std::string> names;
  for (std::optional<std::string> stem = image; stem; stem = StripExtension(*stem)) names.push_back(*stem + ".bmap");
  return names;
}

std::optional<std::string> FindBmap(const std::string& image) {
  auto image_id = FileIdOfPath(image);
  for (const std::string& name : BmapCandidates(image)) {
    struct stat st;
    if (::stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (image_id.ok() && *image_id && **image_id == FileIdOf(st)) continue;
    return name;
  }
  return std::nullopt;
}

}  // namespace flashpipe::input
