// Block device users from sysfs (/sys/dev/block/M:m, /sys/block/loop*) and
// /proc/self/mountinfo.
#include "io/device_users.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "base/unique_fd.h"

namespace flashpipe::io {
namespace {

namespace fs = std::filesystem;

std::string SysDir(dev_t dev, const std::string& root) {
  return fmt::format("{}/sys/dev/block/{}:{}", root, major(dev), minor(dev));
}

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::optional<dev_t> ParseDev(const std::string& text) {
  unsigned ma = 0, mi = 0;
  char colon = 0;
  std::istringstream in(text);
  if (!(in >> ma >> colon >> mi) || colon != ':') return std::nullopt;
  return makedev(ma, mi);
}

// mountinfo escapes blanks and backslashes in paths as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  auto octal = [&](size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '7'; };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The device and its partitions (subdirectories with a "partition" file).
std::set<dev_t> DeviceAndPartitions(dev_t rdev, const std::string& root, std::vector<std::string>* dirs) {
  std::set<dev_t> devs{rdev};
  std::string dir = SysDir(rdev, root);
  dirs->push_back(dir);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!fs::exists(e.path() / "partition", ec)) continue;
    if (auto d = ParseDev(ReadLine((e.path() / "dev").string()))) {
      devs.insert(*d);
      dirs->push_back(e.path().string());
    }
  }
  return devs;
}

std::vector<std::string> HoldersOf(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const std::string& dir : dirs) {
    for (const auto& e : fs::directory_iterator(dir + "/holders", ec)) out.push_back(e.path().filename().string());
  }
  return out;
}

// The kernel's own answer to "may I claim this device": an O_EXCL open.
bool ExclusivelyOpened(const std::string& node) {
  UniqueFd fd(::open(node.c_str(), O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK));
  return !fd.valid() && errno == EBUSY;
}

std::string DeviceNode(dev_t rdev, const std::string& root) {
  std::error_code ec;
  fs::path sys = fs::canonical(SysDir(rdev, root), ec);
  std::string name = ec ? fmt::format("{}:{}", major(rdev), minor(rdev)) : sys.filename().string();
  return root + "/dev/" + name;
}

}  // namespace

std::vector<MountInfo> MountsFromMountinfo(const std::string& mountinfo, dev_t device,
                                           const std::vector<dev_t>& partitions) {
  std::vector<MountInfo> out;
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    std::istringstream fields(line);
    std::string id, parent, majmin, fsroot, point, options, fstype, source;
    if (!(fields >> id >> parent >> majmin >> fsroot >> point >> options)) continue;
    auto d = ParseDev(majmin);
    if (!d) continue;
    bool partition = std::find(partitions.begin(), partitions.end(), *d) != partitions.end();
    if (*d != device && !partition) continue;
    size_t dash = line.find(" - ");
    if (dash != std::string::npos) std::istringstream(line.substr(dash + 3)) >> fstype >> source;
    bool rw = options == "rw" || options.starts_with("rw,");
    out.push_back({Unescape(source), Unescape(point), rw, *d != device});
  }
  return out;
}

bool BlockUse::mounted_read_write() const {
  return std::any_of(mounts.begin(), mounts.end(), [](const MountInfo& m) { return m.read_write; });
}

std::string BlockUse::Why() const {
  std::string why;
  for (const MountInfo& m : mounts) why += (why.empty() ? "" : ", ") + fmt::format("mounted on {}", m.point);
  for (const std::string& h : holders) why += (why.empty() ? "" : ", ") + fmt::format("held by {}", h);
  if (why.empty() && busy) why = "opened exclusively by another program";
  return why;
}

std::string BlockUse::Describe() const {
  std::string why = Why();
  return why.empty() ? device : fmt::format("{} ({})", device, why);
}

BlockUse UseOfBlockDevice(dev_t rdev, const std::string& root) {
  BlockUse use;
  use.device = DeviceNode(rdev, root);
  std::vector<std::string> dirs;
  std::set<dev_t> devs = DeviceAndPartitions(rdev, root, &dirs);
  std::vector<dev_t> partitions;
  for (dev_t d : devs) {
    if (d != rdev) partitions.push_back(d);
  }
  std::ifstream in(root + "/proc/self/mountinfo");
  std::stringstream text;
  text << in.rdbuf();
  use.mounts = MountsFromMountinfo(text.str(), rdev, partitions);
  use.holders = HoldersOf(dirs);
  use.busy = ExclusivelyOpened(use.device);
  if (!root.empty()) use.device = use.device.substr(root.size());
  return use;
}

std::optional<FileId> LoopBackingFile(dev_t rdev, const std::string& root) {
  std::string path = ReadLine(SysDir(rdev, root) + "/loop/backing_file");
  if (path.empty()) return std::nullopt;
  // A backing file unlinked after the attach is shown as "PATH (deleted)";
  // no path names it any more, so no target can be it.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) return std::nullopt;
  struct stat st;
  if (::stat((root + path).c_str(), &st) != 0) return std::nullopt;
  return FileIdOf(st);
}

std::vector<BlockUse> LoopDevicesBackedBy(const FileId& file, const std::string& root) {
  std::vector<BlockUse> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root + "/sys/block", ec)) {
    if (!e.path().filename().string().starts_with("loop")) continue;
    auto dev = ParseDev(ReadLine((e.path() / "dev").string()));
    if (!dev) continue;
    std::optional<FileId> backing = LoopBackingFile(*dev, root);
    if (backing && *backing == file) out.push_back(UseOfBlockDevice(*dev, root));
  }
  return out;
}

std::vector<KernelPartition> KernelPartitionsOf(dev_t rdev, const std::string& root) {
  std::vector<KernelPartition> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(SysDir(rdev, root), ec)) {
    if (!fs::exists(e.path() / "partition", ec)) continue;
    auto dev = ParseDev(ReadLine((e.path() / "dev").string()));
    if (!dev) continue;
    KernelPartition p;
    p.dev = *dev;
    p.name = e.path().filename().string();
    p.number = static_cast<uint32_t>(std::strtoul(ReadLine((e.path() / "partition").string()).c_str(), nullptr, 10));
    p.start = std::strtoull(ReadLine((e.path() / "start").string()).c_str(), nullptr, 10);
    p.size = std::strtoull(ReadLine((e.path() / "size").string()).c_str(), nullptr, 10);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.number < b.number; });
  return out;
}

dev_t WholeDisk(dev_t rdev, const std::string& root) {
  std::error_code ec;
  fs::path dir = fs::canonical(SysDir(rdev, root), ec);
  if (ec || !fs::exists(dir / "partition", ec)) return rdev;
  return ParseDev(ReadLine((dir.parent_path() / "dev").string())).value_or(rdev);
}

bool BlockDevicesOverlap(dev_t a, dev_t b, const std::string& root) {
  if (a == b) return true;
  dev_t wa = WholeDisk(a, root), wb = WholeDisk(b, root);
  // A disk overlaps each of its partitions; two partitions of one disk do not.
  return wa == wb && (wa == a || wb == b);
}

}  // namespace flashpipe::io
