// oem partconf:BOOT_ACK:BOOT_PARTITION[:PARTITION_ACCESS] and
// oem bootbus:WIDTH:RESET:MODE, as U-Boot's fastboot offers them (its
// CONFIG_FASTBOOT_CMD_OEM_PARTCONF / _BOOTBUS run `mmc partconf` and
// `mmc bootbus` on the fastboot eMMC): the same fields, checks and read-back
// as `flashpipe mmc` (mmc/card.h), on the card serve --mmc names. Refused
// while locked: the card's boot configuration is what boots the board.
#include "fastboot/reason_text.h"
#include "fastboot/session.h"
#include "wire/protocol.h"
#include "mmc/card.h"
#include "mmc/ext_csd_report.h"

namespace flashpipe::fastboot {
namespace {

std::vector<std::string> SplitColons(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    size_t j = s.find(':', i);
    out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) return out;
    i = j + 1;
  }
}

// "PARTITION_CONFIG [179] 0x00 -> 0x48" in the OKAY; the words go to INFO.
std::string Short(const mmc::FieldChange& c) {
  const char* name = c.index == mmc::field::kPartitionConfig ? "PARTITION_CONFIG" : "BOOT_BUS_CONDITIONS";
  if (!c.changed()) return fmt::format("{} [{}] 0x{:02x} already", name, c.index, c.after[c.index]);
  return fmt::format("{} [{}] 0x{:02x} -> 0x{:02x}", name, c.index, c.before[c.index], c.after[c.index]);
}

}  // namespace

Result<std::string> Session::Report(const mmc::FieldChange& change) {
  for (const auto& line : WrapWords(mmc::DescribeField(change.index, change.after[change.index]), wire::kMaxMessage)) {
    if (!SendInfo(line).ok()) return transport_error_;
  }
  return Short(change);
}

Result<std::string> Session::DoOemPartconf(const std::string& args) {
  if (device_->state().locked()) return InvalidArgument("oem partconf: locked (fastboot flashing unlock)");
  std::vector<std::string> v = SplitColons(args);
  if (args.empty() || v.size() < 2 || v.size() > 3) {
    return InvalidArgument("oem partconf:BOOT_ACK:BOOT_PARTITION[:PARTITION_ACCESS]");
  }
  FP_ASSIGN_OR_RETURN(mmc::PartConfRequest request, mmc::ParsePartConf(v[0], v[1], v.size() > 2 ? v[2] : ""));
  const auto& open = device_->config().open_mmc;
  if (!open) return Unsupported("oem partconf: no eMMC (serve --mmc /dev/mmcblkN)");
  FP_ASSIGN_OR_RETURN(auto card, open());
  FP_ASSIGN_OR_RETURN(mmc::FieldChange change, mmc::SetPartitionConfig(*card, request));
  return Report(change);
}

Result<std::string> Session::DoOemBootbus(const std::string& args) {
  if (device_->state().locked()) return InvalidArgument("oem bootbus: locked (fastboot flashing unlock)");
  std::vector<std::string> v = SplitColons(args);
  if (args.empty() || v.size() != 3) return InvalidArgument("oem bootbus:WIDTH:RESET:MODE");
  FP_ASSIGN_OR_RETURN(mmc::BootBus request, mmc::ParseBootBus(v[0], v[1], v[2]));
  const auto& open = device_->config().open_mmc;
  if (!open) return Unsupported("oem bootbus: no eMMC (serve --mmc /dev/mmcblkN)");
  FP_ASSIGN_OR_RETURN(auto card, open());
  FP_ASSIGN_OR_RETURN(mmc::FieldChange change, mmc::SetBootBus(*card, request));
  return Report(change);
}

}  // namespace flashpipe::fastboot
