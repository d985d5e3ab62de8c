// The session's commands for dynamic partitions (session.h): update-super and
// create/delete/resize-logical-partition, as fastbootd answers them. Names
// are exact ("system_a": the client adds the slot suffix itself), sizes are
// bytes in decimal (as the client sends them) or 0x hex. Each refuses while
// the device is locked (the command table), and while the critical lock
// holds for the partition or for the super that contains it.
#include <charconv>

#include "base/log.h"
#include "base/units.h"
#include "fastboot/session.h"

namespace flashpipe::fastboot {
namespace {

Result<uint64_t> ParseBytes(std::string_view what, std::string_view text) {
  auto v = ParseNumber(text);  // base/units.h: decimal or 0x hex, no leading 0
  if (!v.ok()) {
    return InvalidArgument(fmt::format("{}: size '{}' is not a number of bytes: {}", what, text.substr(0, 24),
                                       v.status().message()));
  }
  return v;
}

// "NAME:SIZE" -> NAME, SIZE.
Result<std::pair<std::string, uint64_t>> NameAndSize(std::string_view what, const std::string& arg) {
  size_t colon = arg.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgument(fmt::format("{}: expected PARTITION:SIZE", what));
  }
  FP_ASSIGN_OR_RETURN(uint64_t size, ParseBytes(what, std::string_view(arg).substr(colon + 1)));
  return std::pair{arg.substr(0, colon), size};
}

}  // namespace

// The super, when the critical lock does not cover it.
Result<DynamicPartitions*> Session::SuperForChange(std::string_view what) {
  DynamicPartitions* d = device_->storage().dynamic();
  if (d == nullptr) return Unsupported(fmt::format("{}: this device has no super partition", what));
  if (device_->state().critical_locked() && device_->IsCritical(d->super().name)) {
    return InvalidArgument(fmt::format("critical partition '{}': flashing unlock_critical", d->super().name));
  }
  return d;
}

Result<std::string> Session::DoUpdateSuper(const std::string& arg) {
  size_t colon = arg.find(':');
  const std::string name = arg.substr(0, colon);
  const std::string option = colon == std::string::npos ? "" : arg.substr(colon + 1);
  if (!option.empty() && option != "wipe") {
    return InvalidArgument(fmt::format("update-super: unknown option '{}'", option.substr(0, 20)));
  }
  FP_ASSIGN_OR_RETURN(DynamicPartitions * d, SuperForChange("update-super"));
  if (name != d->super().name) {
    return NotFound(fmt::format("update-super: the super partition is '{}', not '{}'", d->super().name,
                                name.substr(0, 36)));
  }
  std::vector<uint8_t> scratch;
  FP_ASSIGN_OR_RETURN(std::span<const uint8_t> image, device_->DownloadedBytes(&scratch));
  const std::string suffix = HasSlots() ? fmt::format("_{}", device_->state().slot()) : "";
  FP_RETURN_IF_ERROR(d->UpdateSuper(image, option == "wipe", suffix));
  log::Info("{}: update-super:{}{}", transport_->peer(), d->super().name, option.empty() ? "" : ":wipe");
  return std::string();
}

Result<std::string> Session::DoCreateLogical(const std::string& arg) {
  FP_ASSIGN_OR_RETURN(auto name_size, NameAndSize("create-logical-partition", arg));
  const auto& [name, size] = name_size;
  FP_ASSIGN_OR_RETURN(DynamicPartitions * d, SuperForChange("create-logical-partition"));
  if (device_->storage().Find(name) != nullptr) {
    return InvalidArgument(fmt::format("partition '{}' already exists", name.substr(0, 36)));
  }
  if (device_->state().critical_locked() && device_->IsCritical(name)) {
    return InvalidArgument(fmt::format("critical partition '{}': flashing unlock_critical", name));
  }
  FP_RETURN_IF_ERROR(d->Create(name, size));
  log::Info("{}: created logical partition '{}' of {} bytes", transport_->peer(), name, size);
  return std::string();
}

Result<std::string> Session::DoDeleteLogical(const std::string& arg) {
  FP_ASSIGN_OR_RETURN(DynamicPartitions * d, SuperForChange("delete-logical-partition"));
  if (d->Find(arg) == nullptr) return NotFound(fmt::format("logical partition '{}' not found", arg.substr(0, 36)));
  FP_RETURN_IF_ERROR(ResolveWritable(arg).status());
  FP_RETURN_IF_ERROR(d->Delete(arg));
  log::Info("{}: deleted logical partition '{}'", transport_->peer(), arg);
  return std::string();
}

Result<std::string> Session::DoResizeLogical(const std::string& arg) {
  FP_ASSIGN_OR_RETURN(auto name_size, NameAndSize("resize-logical-partition", arg));
  const auto& [name, size] = name_size;
  FP_ASSIGN_OR_RETURN(DynamicPartitions * d, SuperForChange("resize-logical-partition"));
  if (d->Find(name) == nullptr) return NotFound(fmt::format("logical partition '{}' not found", name.substr(0, 36)));
  FP_RETURN_IF_ERROR(ResolveWritable(name).status());
  FP_RETURN_IF_ERROR(d->Resize(name, size));
  log::Debug("{}: resized logical partition '{}' to {} bytes", transport_->peer(), name, size);
  return std::string();
}

Result<std::string> Session::VarSuperPartitionName(std::string_view) {
  const DynamicPartitions* d = device_->storage().dynamic();
  if (d == nullptr) return NotFound("this device has no super partition");
  return d->super().name;
}

}  // namespace flashpipe::fastboot
