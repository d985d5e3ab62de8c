// FakeMmcCard: an MmcDevice that models an eMMC's EXT_CSD as JEDEC
// JESD84-B51 defines it, for tests of mmc/card.h and the commands above it
// (header-only, links only flashpipe_mmc). No eMMC model exists in the QEMU
// the VM tests use, so this is where boot areas and SWITCH are tested.
//
//   testing::FakeMmcCard card;            // a 5.1 eMMC with 4 MiB boot areas
//   card.set_boot_size_mult(0);           // ... or one without boot areas
//   card.set_type("SD");                  // ... or an SD card: CMD8 times out
//
// What it checks and does, as a card and the kernel's ioctl path would:
//   CMD8 SEND_EXT_CSD  must be R1 + ADTC, one 512-byte read block; copies
//                      EXT_CSD. An SD card (or no_ext_csd()) does not answer:
//                      ETIMEDOUT, as sdhci reports a missing response.
//   CMD6 SWITCH        must be R1b + AC with no data; only the write-byte
//                      access mode. The card refuses (the field stays, as
//                      SWITCH_ERROR, which the kernel's busy poll consumes,
//                      so the caller sees only the unchanged field): any
//                      byte of the read-only Properties Segment [511:192],
//                      BOOT_WP_STATUS [174], reserved bits and values of
//                      PARTITION_CONFIG [179] and BOOT_BUS_CONDITIONS [177],
//                      boot areas or RPMB the card lacks, HS/DDR boot without
//                      BOOT_INFO [228] support, PARTITION_CONFIG's boot bits
//                      while BOOT_CONFIG_PROT [178] locks them.
// Every command is logged (commands()); FailNext(errno) fails the next ioctl,
// IgnoreSwitches() acknowledges SWITCH and changes nothing (a card that lies).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "mmc/card.h"
#include "mmc/ext_csd.h"
#include "mmc/mmc_device.h"

namespace flashpipe::testing {

class FakeMmcCard final : public mmc::MmcDevice {
 public:
  struct Command {
    uint32_t opcode, arg;
  };

  FakeMmcCard() {
    auto& b = ext_csd_.mutable_bytes();
    b[mmc::field::kExtCsdRev] = 8;            // v5.1
    b[mmc::field::kBootSizeMult] = 32;        // 4 MiB per boot area
    b[mmc::field::kRpmbSizeMult] = 32;
    b[mmc::field::kBootInfo] = 0x07;          // ALT, DDR and HS boot
    b[mmc::field::kPartitionSupport] = 0x07;
    b[mmc::field::kSecCount + 1] = 0x00;
    b[mmc::field::kSecCount + 2] = 0xe9;      // 0x00e90000 sectors, about 7.3 GiB
    b[mmc::field::kSecCount + 3] = 0x00;
  }

  void set_type(std::string type) { type_ = std::move(type); }
  void set_boot_size_mult(uint8_t v) { ext_csd_.mutable_bytes()[mmc::field::kBootSizeMult] = v; }
  void set_byte(uint8_t index, uint8_t v) { ext_csd_.mutable_bytes()[index] = v; }
  uint8_t byte(uint8_t index) const { return ext_csd_[index]; }
  void no_ext_csd() { no_ext_csd_ = true; }
  void FailNext(int err) { fail_next_ = err; }
  void IgnoreSwitches() { ignore_switches_ = true; }
  const std::vector<Command>& commands() const { return commands_; }
  int switches() const {
    int n = 0;
    for (const Command& c : commands_) n += c.opcode == mmc::kCmdSwitch;
    return n;
  }
  int refused_switches() const { return refused_; }

  const std::string& name() const override { return name_; }
  const std::string& card_type() const override { return type_; }

  Status Issue(mmc_ioc_cmd& cmd) override {
    commands_.push_back({cmd.opcode, cmd.arg});
    if (fail_next_ != 0) return IoError("fake MMC_IOC_CMD", std::exchange(fail_next_, 0));
    std::memset(cmd.response, 0, sizeof(cmd.response));
    switch (cmd.opcode) {
      case mmc::kCmdSendExtCsd: return SendExtCsd(cmd);
      case mmc::kCmdSwitch: return Switch(cmd);
      default: return IoError(fmt::format("fake card: CMD{} not modelled", cmd.opcode), ETIMEDOUT);
    }
  }

 private:
  static constexpr uint32_t kTranState = 4u << 9 | 1u << 8;  // CURRENT_STATE tran, READY_FOR_DATA

  Status SendExtCsd(mmc_ioc_cmd& cmd) {
    if (type_ != "MMC" || no_ext_csd_) return IoError("no response to CMD8", ETIMEDOUT);
    if ((cmd.flags & mmc::rsp::kR1b) != mmc::rsp::kR1 || (cmd.flags & (3u << 5)) != mmc::rsp::kCmdAdtc ||
        cmd.blksz != mmc::kExtCsdSize || cmd.blocks != 1 || cmd.write_flag != 0 || cmd.data_ptr == 0) {
      return InvalidArgument("fake card: CMD8 must be R1, ADTC, one 512-byte read block");
    }
    std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(cmd.data_ptr)), ext_csd_.bytes().data(), mmc::kExtCsdSize);
    cmd.response[0] = kTranState;
    return Status::Ok();
  }

  Status Switch(mmc_ioc_cmd& cmd) {
    if (type_ != "MMC") return IoError("no response to CMD6", ETIMEDOUT);
    if ((cmd.flags & mmc::rsp::kR1b) != mmc::rsp::kR1b || (cmd.flags & (3u << 5)) != mmc::rsp::kCmdAc ||
        cmd.blocks != 0 || cmd.data_ptr != 0) {
      return InvalidArgument("fake card: CMD6 must be R1b, AC, without data");
    }
    cmd.response[0] = kTranState;
    uint32_t access = (cmd.arg >> 24) & 3;
    auto index = static_cast<uint8_t>(cmd.arg >> 16);
    auto value = static_cast<uint8_t>(cmd.arg >> 8);
    if (access != 3 || !Accepts(index, value)) {
      ++refused_;
      return Status::Ok();
    }
    if (!ignore_switches_) ext_csd_.mutable_bytes()[index] = value;
    return Status::Ok();
  }

  bool Accepts(uint8_t index, uint8_t value) const {
    if (index >= mmc::field::kExtCsdRev || index == mmc::field::kBootWpStatus) return false;  // read-only
    bool boot_areas = ext_csd_[mmc::field::kBootSizeMult] != 0;
    if (index == mmc::field::kPartitionConfig) {
      auto want = mmc::PartitionConfig::Decode(value);
      auto now = ext_csd_.partition_config();
      if (value & 0x80) return false;
      if (want.boot_partition >= 3 && want.boot_partition <= 6) return false;
      if (!boot_areas && (want.boot_partition == 1 || want.boot_partition == 2 || want.partition_access == 1 ||
                          want.partition_access == 2)) return false;
      if (want.partition_access == 3 && ext_csd_[mmc::field::kRpmbSizeMult] == 0) return false;
      if (want.partition_access >= 4 && ext_csd_.gp_size_mult(want.partition_access - 3) == 0) return false;
      bool boot_bits = want.boot_ack != now.boot_ack || want.boot_partition != now.boot_partition;
      if (boot_bits && (ext_csd_[mmc::field::kBootConfigProt] & 0x11)) return false;
    }
    if (index == mmc::field::kBootBusConditions) {
      auto want = mmc::BootBus::Decode(value);
      if ((value & 0xe0) || want.width == 3 || want.mode == 3 || !boot_areas) return false;
      if (want.mode == 1 && !ext_csd_.supports_hs_boot()) return false;
      if (want.mode == 2 && !ext_csd_.supports_ddr_boot()) return false;
    }
    return true;
  }

  mmc::ExtCsd ext_csd_;
  std::string name_ = "/dev/mmcblk0", type_ = "MMC";
  std::vector<Command> commands_;
  bool no_ext_csd_ = false, ignore_switches_ = false;
  int fail_next_ = 0, refused_ = 0;
};

}  // namespace flashpipe::testing
