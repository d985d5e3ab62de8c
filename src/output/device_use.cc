#include "output/device_use.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace flashpipe::output {
namespace {

namespace fs = std::filesystem;

std::string SysBlock(dev_t dev) { return fmt::format("/sys/dev/block/{}:{}", major(dev), minor(dev)); }

// "259:3" in a sysfs dev file.
bool ReadDev(const fs::path& file, dev_t* dev) {
  std::ifstream in(file);
  unsigned maj = 0, min = 0;
  char colon = 0;
  if (!(in >> maj >> colon >> min) || colon != ':') return false;
  *dev = makedev(maj, min);
  return true;
}

// The device and its partitions (subdirectories with a "partition" file).
std::vector<dev_t> WithPartitions(dev_t dev) {
  std::vector<dev_t> out{dev};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(SysBlock(dev), ec)) {
    dev_t part;
    if (fs::exists(e.path() / "partition", ec) && ReadDev(e.path() / "dev", &part)) out.push_back(part);
  }
  return out;
}

void Holders(dev_t dev, std::vector<std::string>* out) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(SysBlock(dev) + "/holders", ec)) {
    out->push_back(e.path().filename().string());
  }
}

}  // namespace

void MountsFromMountinfo(const std::string& mountinfo, const std::vector<dev_t>& devs, DeviceUse* use) {
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    std::istringstream f(line);
    std::string id, parent, majmin, root, point, options, fstype, source;
    if (!(f >> id >> parent >> majmin >> root >> point >> options)) continue;
    size_t dash = line.find(" - ");
    if (dash != std::string::npos) std::istringstream(line.substr(dash + 3)) >> fstype >> source;
    unsigned maj = 0, min = 0;
    if (std::sscanf(majmin.c_str(), "%u:%u", &maj, &min) != 2) continue;
    auto it = std::find_if(devs.begin(), devs.end(), [&](dev_t d) { return major(d) == maj && minor(d) == min; });
    if (it == devs.end()) continue;
    bool rw = options == "rw" || options.starts_with("rw,");
    use->mounted_read_write = use->mounted_read_write || rw;
    use->mounts.push_back({source, point, rw, it != devs.begin()});
  }
}

std::string MountWarning(const std::string& path, const DeviceUse& use) {
  std::vector<std::string> where;
  bool whole = true;
  for (const Mount& m : use.mounts) {
    whole = whole && !m.partition;
    where.push_back(fmt::format("{} at {} ({})", m.source, m.point, m.read_write ? "read-write" : "read-only"));
  }
  std::string what = whole ? fmt::format("{} is mounted at {}", path, use.mounts.front().point)
                           : fmt::format("{} has mounted partitions: {}", path, fmt::join(where, ", "));
  if (whole) what += use.mounted_read_write ? " (read-write)" : " (read-only)";
  if (!use.mounted_read_write) return what;
  return what + ": files may change while they are read, so the image may be inconsistent (unmount it or "
                "remount it read-only first)";
}

DeviceUse FindDeviceUse(dev_t dev) {
  DeviceUse use;
  std::vector<dev_t> devs = WithPartitions(dev);
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream text;
  text << in.rdbuf();
  MountsFromMountinfo(text.str(), devs, &use);
  for (dev_t d : devs) Holders(d, &use.holders);
  return use;
}

}  // namespace flashpipe::output
