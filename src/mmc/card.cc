// EXT_CSD through SEND_EXT_CSD and SWITCH, every write read back.
#include "mmc/card.h"

#include <cstring>

namespace flashpipe::mmc {
namespace {

constexpr uint32_t kSwitchWriteByte = 3;  // SWITCH access mode, arg bits 25:24
constexpr uint32_t kCmdSetNormal = 1;     // arg bits 2:0

bool IsSd(const MmcDevice& dev) { return dev.card_type() == "SD" || dev.card_type() == "SDIO"; }

std::string R1Errors(uint32_t status) {
  struct Bit {
    uint32_t mask;
    const char* name;
  };
  static constexpr Bit kBits[] = {
      {1u << 31, "ADDRESS_OUT_OF_RANGE"}, {1u << 30, "ADDRESS_MISALIGN"}, {1u << 29, "BLOCK_LEN_ERROR"},
      {1u << 26, "WP_VIOLATION"},         {1u << 23, "COM_CRC_ERROR"},    {kR1IllegalCommand, "ILLEGAL_COMMAND"},
      {1u << 21, "CARD_ECC_FAILED"},      {1u << 20, "CC_ERROR"},         {1u << 19, "ERROR"},
      {kR1SwitchError, "SWITCH_ERROR"}};
  std::string out;
  for (const Bit& b : kBits) {
    if (status & b.mask) out += std::string(out.empty() ? "" : ", ") + b.name;
  }
  return fmt::format("R1 status 0x{:08x}{}", status, out.empty() ? "" : " (" + out + ")");
}

Status NoExtCsd(const MmcDevice& dev, const std::string& answer) {
  if (IsSd(dev)) {
    return Unsupported(fmt::format("{} is an SD card (sysfs device/type {}): it has no EXT_CSD, so no boot areas or "
                                   "PARTITION_CONFIG; CMD8 SEND_EXT_CSD through MMC_IOC_CMD: {}",
                                   dev.name(), dev.card_type(), answer));
  }
  return Unsupported(fmt::format("{}: the card answered CMD8 SEND_EXT_CSD with an error, so it has no EXT_CSD "
                                 "(not an eMMC of v4.0 or later; device/type {}): {}",
                                 dev.name(), dev.card_type().empty() ? "unknown" : dev.card_type(), answer));
}

}  // namespace

Result<ExtCsd> ReadExtCsd(MmcDevice& dev) {
  std::array<uint8_t, kExtCsdSize> bytes{};
  mmc_ioc_cmd cmd;
  std::memset(&cmd, 0, sizeof(cmd));
  cmd.write_flag = 0;
  cmd.opcode = kCmdSendExtCsd;
  cmd.arg = 0;
  cmd.flags = rsp::kSpiR1 | rsp::kR1 | rsp::kCmdAdtc;
  cmd.blksz = kExtCsdSize;
  cmd.blocks = 1;
  mmc_ioc_cmd_set_data(cmd, bytes.data());
  Status s = dev.Issue(cmd);
  if (!s.ok()) return NoExtCsd(dev, s.ToString());
  if (cmd.response[0] & kR1ErrorBits) return NoExtCsd(dev, R1Errors(cmd.response[0]));
  if (IsSd(dev)) return NoExtCsd(dev, "answered, but an SD card's CMD8 is SEND_IF_COND");
  return ExtCsd(bytes);
}

Status SwitchByte(MmcDevice& dev, uint8_t index, uint8_t value) {
  if (IsSd(dev)) return Unsupported(fmt::format("{} is an SD card: no EXT_CSD to SWITCH", dev.name()));
  mmc_ioc_cmd cmd;
  std::memset(&cmd, 0, sizeof(cmd));
  cmd.write_flag = 1;
  cmd.opcode = kCmdSwitch;
  cmd.arg = kSwitchWriteByte << 24 | uint32_t{index} << 16 | uint32_t{value} << 8 | kCmdSetNormal;
  cmd.flags = rsp::kSpiR1b | rsp::kR1b | rsp::kCmdAc;
  FP_RETURN_IF_ERROR(dev.Issue(cmd).WithContext(fmt::format("SWITCH EXT_CSD[{}] to 0x{:02x}", index, value)));
  if (cmd.response[0] & kR1ErrorBits) {
    return IoError(fmt::format("{}: SWITCH EXT_CSD[{}] to 0x{:02x}: {}", dev.name(), index, value, R1Errors(cmd.response[0])),
                   EIO);
  }
  return Status::Ok();
}

Result<FieldChange> WriteField(MmcDevice& dev, const ExtCsd& before, uint8_t index, uint8_t value) {
  FieldChange change{.index = index, .before = before, .after = before};
  if (before[index] == value) return change;
  FP_RETURN_IF_ERROR(SwitchByte(dev, index, value));
  auto after = ReadExtCsd(dev);
  if (!after.ok()) return after.status().WithContext(fmt::format("EXT_CSD read back after SWITCH of [{}]", index));
  change.after = *after;
  if (change.after[index] != value) {
    return IoError(fmt::format("{}: EXT_CSD[{}] reads 0x{:02x} after SWITCH to 0x{:02x} (was 0x{:02x}): the card did not take "
                               "the value",
                               dev.name(), index, change.after[index], value, before[index]),
                   EIO);
  }
  return change;
}

Result<FieldChange> SetPartitionConfig(MmcDevice& dev, const PartConfRequest& request) {
  FP_ASSIGN_OR_RETURN(ExtCsd card, ReadExtCsd(dev));
  PartitionConfig want{.boot_ack = request.boot_ack,
                       .boot_partition = request.boot_partition,
                       .partition_access = request.partition_access.value_or(card.partition_config().partition_access)};
  FP_RETURN_IF_ERROR(CheckPartitionConfig(card, want).WithContext(dev.name()));
  return WriteField(dev, card, field::kPartitionConfig, want.Encode());
}

Result<FieldChange> SetBootBus(MmcDevice& dev, const BootBus& request) {
  FP_ASSIGN_OR_RETURN(ExtCsd card, ReadExtCsd(dev));
  FP_RETURN_IF_ERROR(CheckBootBus(card, request).WithContext(dev.name()));
  return WriteField(dev, card, field::kBootBusConditions, request.Encode());
}

}  // namespace flashpipe::mmc
