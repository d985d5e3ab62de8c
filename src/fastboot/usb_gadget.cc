#include "fastboot/usb_gadget.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "base/fd_io.h"
#include "base/log.h"
#include "base/unique_fd.h"

namespace flashpipe::fastboot {
namespace {

constexpr long kConfigfsMagic = 0x62656570;
constexpr const char* kConfig = "configs/c.1";

bool IsDir(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A sysfs/configfs attribute, without its trailing newline ("" when absent).
std::string ReadAttr(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  uint8_t buf[256];
  auto n = ReadUpTo(fd.get(), buf, path);
  if (!n.ok()) return {};
  std::string s(reinterpret_cast<char*>(buf), *n);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

Status WriteAttr(const std::string& path, std::string_view value) {
  UniqueFd fd(RetryOnEintr([&] { return ::open(path.c_str(), O_WRONLY | O_CLOEXEC); }));
  if (!fd.valid()) return ErrnoError("open " + path);
  return WriteAll(fd.get(), {reinterpret_cast<const uint8_t*>(value.data()), value.size()}, path);
}

bool IsMountPoint(const std::string& path) {
  struct stat a{}, b{};
  return ::stat(path.c_str(), &a) == 0 && ::stat((path + "/..").c_str(), &b) == 0 && a.st_dev != b.st_dev;
}

// "dummy_udc.0" -> "flashpipe-dummy_udc_0": a configfs and FunctionFS name.
std::string GadgetName(const std::string& udc) {
  std::string name = "flashpipe-";
  for (char c : udc) name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return name;
}

// What the kernel must offer, checked before anything is made; the UDC to use.
Result<std::string> CheckKernel(const GadgetConfig& c) {
  struct statfs fs{};
  if (::statfs(c.configfs.c_str(), &fs) != 0 || static_cast<long>(fs.f_type) != kConfigfsMagic) {
    return Unsupported(fmt::format("usb: configfs is not mounted on {} (modprobe configfs; mount -t configfs none {})",
                                   c.configfs, c.configfs));
  }
  if (!IsDir(c.configfs + "/usb_gadget")) {
    return Unsupported(fmt::format("usb: no {}/usb_gadget: libcomposite is not loaded (modprobe libcomposite)", c.configfs));
  }
  std::vector<std::string> udcs = ListDir(c.udc_class);
  if (udcs.empty()) {
    return Unsupported(fmt::format("usb: no USB device controller (UDC) in {}: the board needs its UDC driver "
                                   "in peripheral mode (dwc2, dwc3, ...) or dummy_hcd",
                                   c.udc_class));
  }
  std::string udc = c.udc.empty() ? udcs[0] : c.udc;
  if (std::find(udcs.begin(), udcs.end(), udc) == udcs.end()) {
    return NotFound(fmt::format("usb: no UDC '{}' in {} (there: {})", udc, c.udc_class, fmt::join(udcs, ", ")));
  }
  if (std::string user = ReadAttr(c.udc_class + "/" + udc + "/function"); !user.empty()) {
    return Busy(fmt::format("usb: UDC {} is in use by gadget '{}'", udc, user));
  }
  return udc;
}

// A gadget of ours left by a daemon that did not exit cleanly: FunctionFS
// unbinds a gadget when its ep0 closes, so an unbound one is stale.
Status RemoveStale(const std::string& dir, const std::string& mount, const std::string& name) {
  if (std::string udc = ReadAttr(dir + "/UDC"); !udc.empty()) {
    return Busy(fmt::format("usb: UDC {} is already served by gadget {} (another flashpipe?)", udc, dir));
  }
  log::Warn("usb: removing gadget {} left by a daemon that did not exit cleanly", dir);
  if (IsMountPoint(mount) && ::umount2(mount.c_str(), MNT_DETACH) != 0) return ErrnoError("umount " + mount);
  (void)::rmdir(mount.c_str());
  const std::string config = dir + "/" + kConfig;
  for (const std::string& link : ListDir(config)) {
    if (link != "strings" && link != "MaxPower" && link != "bmAttributes") (void)::unlink((config + "/" + link).c_str());
  }
  for (const std::string& path : {config + "/strings/0x409", config, dir + "/functions/ffs." + name,
                                  dir + "/strings/0x409", dir}) {
    if (Exists(path) && ::rmdir(path.c_str()) != 0) return ErrnoError("rmdir " + path);
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<UsbGadget>> UsbGadget::Create(const GadgetConfig& config) {
  FP_ASSIGN_OR_RETURN(std::string udc, CheckKernel(config));
  std::unique_ptr<UsbGadget> g(new UsbGadget());
  g->udc_ = udc;
  if (Status st = g->Make(config); !st.ok()) {
    g->Remove();
    return st;
  }
  return g;
}

UsbGadget::~UsbGadget() { Remove(); }

Status UsbGadget::Mkdir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0) return ErrnoError("mkdir " + path);
  undo_.emplace_back(Undo::kRmdir, path);
  return Status::Ok();
}

Status UsbGadget::Make(const GadgetConfig& c) {
  const std::string name = GadgetName(udc_);
  dir_ = c.configfs + "/usb_gadget/" + name;
  mount_ = c.run_dir + "/" + name;
  if (Exists(dir_)) FP_RETURN_IF_ERROR(RemoveStale(dir_, mount_, name));
  FP_RETURN_IF_ERROR(Mkdir(dir_));
  FP_RETURN_IF_ERROR(WriteAttr(dir_ + "/idVendor", fmt::format("0x{:04x}", c.vendor_id)));
  FP_RETURN_IF_ERROR(WriteAttr(dir_ + "/idProduct", fmt::format("0x{:04x}", c.product_id)));
  FP_RETURN_IF_ERROR(Mkdir(dir_ + "/strings/0x409"));
  FP_RETURN_IF_ERROR(WriteAttr(dir_ + "/strings/0x409/serialnumber", c.serial));
  FP_RETURN_IF_ERROR(WriteAttr(dir_ + "/strings/0x409/manufacturer", c.manufacturer));
  FP_RETURN_IF_ERROR(WriteAttr(dir_ + "/strings/0x409/product", c.product));
  const std::string config = dir_ + "/" + kConfig;
  FP_RETURN_IF_ERROR(Mkdir(config));
  FP_RETURN_IF_ERROR(Mkdir(config + "/strings/0x409"));
  FP_RETURN_IF_ERROR(WriteAttr(config + "/strings/0x409/configuration", "fastboot"));
  const std::string function = dir_ + "/functions/ffs." + name;
  if (::mkdir(function.c_str(), 0755) != 0) {
    int e = errno;
    if (e == ENOENT || e == EINVAL) {
      return IoError(fmt::format("usb: mkdir {}: usb_f_fs is not loaded (modprobe usb_f_fs)", function), e);
    }
    return IoError("mkdir " + function, e);
  }
  undo_.emplace_back(Undo::kRmdir, function);
  const std::string link = config + "/ffs." + name;
  if (::symlink(function.c_str(), link.c_str()) != 0) return ErrnoError("symlink " + link);
  undo_.emplace_back(Undo::kUnlink, link);
  if (!IsDir(c.run_dir)) FP_RETURN_IF_ERROR(Mkdir(c.run_dir));
  if (!IsDir(mount_)) FP_RETURN_IF_ERROR(Mkdir(mount_));
  if (::mount(name.c_str(), mount_.c_str(), "functionfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return ErrnoError(fmt::format("usb: mount -t functionfs {} {}", name, mount_));
  }
  undo_.emplace_back(Undo::kUnmount, mount_);
  return Status::Ok();
}

Status UsbGadget::Bind() {
  if (Status st = WriteAttr(dir_ + "/UDC", udc_); !st.ok()) {
    return st.sys_errno() == EBUSY ? Busy(fmt::format("usb: UDC {} is busy (another gadget bound to it?)", udc_)) : st;
  }
  bound_ = true;
  return Status::Ok();
}

Status UsbGadget::Unbind() {
  if (!bound_) return Status::Ok();
  bound_ = false;
  // ENODEV: FunctionFS unbound it already (its ep0 was closed).
  if (Status st = WriteAttr(dir_ + "/UDC", "\n"); !st.ok() && st.sys_errno() != ENODEV) return st;
  return Status::Ok();
}

void UsbGadget::Remove() {
  if (Status st = Unbind(); !st.ok()) log::Warn("{}", st.ToString());
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
    const std::string& path = it->second;
    int r = 0;
    switch (it->first) {
      case Undo::kRmdir: r = ::rmdir(path.c_str()); break;
      case Undo::kUnlink: r = ::unlink(path.c_str()); break;
      case Undo::kUnmount:
        r = ::umount2(path.c_str(), 0);
        if (r != 0 && errno == EBUSY) r = ::umount2(path.c_str(), MNT_DETACH);
        break;
    }
    if (r != 0) log::Warn("usb: removing {}: {}", path, std::strerror(errno));
  }
  undo_.clear();
}

Result<std::pair<uint16_t, uint16_t>> ParseUsbId(std::string_view text) {
  auto hex = [](std::string_view s, uint16_t* out) {
    if (s.empty() || s.size() > 4) return false;
    unsigned v = 0;
    for (char c : s) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
      v = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10);
    }
    *out = static_cast<uint16_t>(v);
    return true;
  };
  size_t colon = text.find(':');
  std::pair<uint16_t, uint16_t> id;
  if (colon == std::string_view::npos || !hex(text.substr(0, colon), &id.first) ||
      !hex(text.substr(colon + 1), &id.second)) {
    return InvalidArgument(fmt::format("--usb-id '{}': expected VID:PID in hex (18d1:4ee0)", text));
  }
  return id;
}

std::string DefaultSerialNumber() {
  std::string id = ReadAttr("/etc/machine-id");
  bool hex = id.size() >= 16 && std::all_of(id.begin(), id.begin() + 16, [](char c) {
               return std::isxdigit(static_cast<unsigned char>(c)) != 0;
             });
  return hex ? id.substr(0, 16) : "flashpipe";
}

}  // namespace flashpipe::fastboot
