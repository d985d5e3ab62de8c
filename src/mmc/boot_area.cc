// Boot areas in sysfs and the force_ro guard.
#include "mmc/boot_area.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "base/fd_io.h"
#include "base/log.h"
#include "base/unique_fd.h"

namespace flashpipe::mmc {
namespace {

// The force_ro files live guards switched off, for the signal handler: a
// fixed table, because a handler may not allocate or lock.
constexpr int kSlots = 16;
constexpr size_t kPathMax = 512;
struct Slot {
  std::atomic<bool> used{false};
  char path[kPathMax];
};
Slot g_slots[kSlots];

int TakeSlot(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!g_slots[i].used.load(std::memory_order_relaxed) &&
        g_slots[i].used.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      return i;
    }
  }
  return -1;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

Status WriteSysfs(const std::string& path, std::string_view value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("cannot open " + path + " for writing");
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
    return ErrnoError(fmt::format("cannot write {} to {}", value, path));
  }
  return Status::Ok();
}

}  // namespace

std::optional<BootAreaName> ParseBootAreaName(std::string_view name) {
  constexpr std::string_view kPrefix = "mmcblk";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  size_t boot = name.find("boot", kPrefix.size());
  if (boot == std::string_view::npos) return std::nullopt;
  std::string_view card_number = name.substr(kPrefix.size(), boot - kPrefix.size());
  std::string_view index = name.substr(boot + 4);
  if (!AllDigits(card_number) || (index != "0" && index != "1")) return std::nullopt;
  return BootAreaName{std::string(name.substr(0, boot)), index[0] - '0'};
}

Result<std::string> BlockNameOf(const std::string& path) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(path, ec);
  if (ec) return IoError("cannot resolve " + path, ec.value());
  return real.filename().string();
}

Result<std::string> ReadSysfsValue(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("cannot open " + path);
  std::string text(256, '\0');
  FP_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd.get(), std::span(reinterpret_cast<uint8_t*>(text.data()), text.size()), path));
  text.resize(n);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::vector<BootAreaInfo> ListBootAreas(const std::string& card, const std::string& sysfs_root) {
  std::vector<BootAreaInfo> out;
  for (int i = 0; i < 2; ++i) {
    std::string name = fmt::format("{}boot{}", card, i);
    auto ro = ReadSysfsValue(fmt::format("{}/block/{}/force_ro", sysfs_root, name));
    if (!ro.ok()) continue;
    out.push_back({name, *ro == "1"});
  }
  return out;
}

std::vector<NamedBootArea> FastbootBootAreas(const std::string& device, const std::string& sysfs_root) {
  auto block = BlockNameOf(device);
  if (!block.ok()) return {};
  std::string card = *block;
  if (auto b = ParseBootAreaName(card)) card = b->card;
  if (!card.starts_with("mmcblk") || !AllDigits(std::string_view(card).substr(6))) return {};
  std::vector<NamedBootArea> out;
  for (const BootAreaInfo& area : ListBootAreas(card, sysfs_root)) {
    out.push_back({fmt::format("mmc{}boot{}", card.substr(6), area.name.back()), "/dev/" + area.name});
  }
  return out;
}

Result<ForceRoGuard> ForceRoGuard::Release(const std::string& block_name, const std::string& sysfs_root) {
  ForceRoGuard g;
  if (!ParseBootAreaName(block_name)) return g;
  std::string path = fmt::format("{}/block/{}/force_ro", sysfs_root, block_name);
  auto now = ReadSysfsValue(path);
  if (!now.ok()) return now.status();
  if (*now == "0") return g;  // writable already: nothing to put back
  if (*now != "1") return Corrupt(fmt::format("{} reads '{}', not 0 or 1", path, *now));
  int slot = TakeSlot(path);
  if (slot < 0) return Internal("too many boot areas held writable at once");
  g.path_ = path;
  g.slot_ = slot;
  Status s = WriteSysfs(path, "0");
  if (!s.ok()) {
    (void)g.Restore();
    return s.WithContext(block_name + ": cannot make the boot area writable");
  }
  log::Debug("{}: force_ro 1 -> 0 for the write", block_name);
  return g;
}

std::optional<std::string> BlockNameOfDevice(dev_t rdev, const std::string& sysfs_root) {
  std::string link = fmt::format("{}/dev/block/{}:{}", sysfs_root, major(rdev), minor(rdev));
  std::error_code ec;
  std::filesystem::path target = std::filesystem::read_symlink(link, ec);
  if (ec) return std::nullopt;
  return target.filename().string();
}

Result<ForceRoGuard> ForceRoGuard::ReleaseDevice(dev_t rdev, const std::string& sysfs_root) {
  auto name = BlockNameOfDevice(rdev, sysfs_root);
  if (!name) return ForceRoGuard();  // no sysfs entry: not a boot area the kernel knows
  return Release(*name, sysfs_root);
}

ForceRoGuard::ForceRoGuard(ForceRoGuard&& o) noexcept
    : path_(std::move(o.path_)), slot_(std::exchange(o.slot_, -1)) {}

ForceRoGuard& ForceRoGuard::operator=(ForceRoGuard&& o) noexcept {
  if (this != &o) {
    if (Status s = Restore(); !s.ok()) log::Warn("{}", s.ToString());
    path_ = std::move(o.path_);
    slot_ = std::exchange(o.slot_, -1);
  }
  return *this;
}

ForceRoGuard::~ForceRoGuard() {
  if (Status s = Restore(); !s.ok()) log::Warn("{}", s.ToString());
}

Status ForceRoGuard::Restore() {
  if (slot_ < 0) return Status::Ok();
  Status s = WriteSysfs(path_, "1");
  g_slots[slot_].used.store(false, std::memory_order_release);
  slot_ = -1;
  if (!s.ok()) return s.WithContext("the boot area stays writable (force_ro 0) until the next boot");
  log::Debug("{}: force_ro restored to 1", path_);
  return Status::Ok();
}

void RestoreForceRoFromSignal() {
  for (Slot& slot : g_slots) {
    if (!slot.used.load(std::memory_order_acquire)) continue;
    int fd = ::open(slot.path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = ::write(fd, "1", 1);
    (void)n;
    ::close(fd);
  }
}

}  // namespace flashpipe::mmc
