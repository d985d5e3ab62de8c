// ExtCsd: the 512-byte EXT_CSD register of an eMMC (JEDEC JESD84-B51,
// section 7.4), the fields flashpipe reads and the two it writes, decoded and
// checked. Pure: no I/O. The card is read and written in mmc/card.h.
//
// Field numbers are the JEDEC byte indices ("[179]"). The Modes Segment
// [191:0] holds the fields a host may write with SWITCH (CMD6), each as the
// standard marks it (R/W, R/W/E, R/W/E_P, or read-only R such as
// BOOT_WP_STATUS [174]); the Properties Segment [511:192] is read-only.
//
//   PARTITION_CONFIG [179]    bit 6 BOOT_ACK, bits 5:3 BOOT_PARTITION_ENABLE
//                             (0 none, 1 boot area 1, 2 boot area 2, 3-6
//                             reserved, 7 user area), bits 2:0 PARTITION_ACCESS
//                             (0 user, 1 boot1, 2 boot2, 3 RPMB, 4-7 GP1-GP4);
//                             bit 7 reserved.
//   BOOT_BUS_CONDITIONS [177] bits 1:0 BOOT_BUS_WIDTH (0 x1, x4 in DDR;
//                             1 x4, 2 x8, 3 reserved), bit 2 RESET_BOOT_BUS_CONDITIONS (0
//                             back to x1 after boot, 1 retain), bits 4:3
//                             BOOT_MODE (0 SDR backward-compatible timing, 1
//                             SDR high-speed timing, 2 DDR, 3 reserved); 7:5
//                             reserved.
//   BOOT_CONFIG_PROT [178], BOOT_WP [173], BOOT_WP_STATUS [174] (2 bits per
//   boot area: 0 not protected, 1 power-on, 2 permanently), RPMB_SIZE_MULT
//   [168], PARTITION_SUPPORT [160], PARTITION_SETTING_COMPLETED [155],
//   GP_SIZE_MULT [154:143], EXT_CSD_REV [192], SEC_COUNT [215:212],
//   BOOT_SIZE_MULT [226] (x 128 KiB per boot area; 0: no boot areas),
//   BOOT_INFO [228] (bit 1 DDR_BOOT_MODE, bit 2 HS_BOOT_MODE supported).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace flashpipe::mmc {

// JEDEC EXT_CSD byte indices.
namespace field {
inline constexpr uint8_t kGpSizeMult = 143;  // [154:143], 3 bytes per GP partition
inline constexpr uint8_t kPartitionSettingCompleted = 155;
inline constexpr uint8_t kPartitionSupport = 160;
inline constexpr uint8_t kRpmbSizeMult = 168;
inline constexpr uint8_t kBootWp = 173;
inline constexpr uint8_t kBootWpStatus = 174;
inline constexpr uint8_t kBootBusConditions = 177;
inline constexpr uint8_t kBootConfigProt = 178;
inline constexpr uint8_t kPartitionConfig = 179;
inline constexpr uint8_t kExtCsdRev = 192;  // first byte of the Properties Segment
inline constexpr uint8_t kSecCount = 212;   // [215:212], little-endian
inline constexpr uint8_t kBootSizeMult = 226;
inline constexpr uint8_t kBootInfo = 228;
}  // namespace field

inline constexpr size_t kExtCsdSize = 512;
inline constexpr uint64_t kBootSizeUnit = 128 * 1024;  // BOOT_SIZE_MULT, RPMB_SIZE_MULT

// PARTITION_CONFIG [179] decoded.
struct PartitionConfig {
  bool boot_ack = false;           // bit 6
  uint8_t boot_partition = 0;      // bits 5:3
  uint8_t partition_access = 0;    // bits 2:0

  static PartitionConfig Decode(uint8_t value);
  uint8_t Encode() const;
  bool operator==(const PartitionConfig&) const = default;
};

// BOOT_BUS_CONDITIONS [177] decoded.
struct BootBus {
  uint8_t width = 0;         // bits 1:0 (0 x1, 1 x4, 2 x8)
  bool retain = false;       // bit 2, RESET_BOOT_BUS_CONDITIONS
  uint8_t mode = 0;          // bits 4:3 (0 SDR compatible, 1 SDR high speed, 2 DDR)

  static BootBus Decode(uint8_t value);
  uint8_t Encode() const;
  bool operator==(const BootBus&) const = default;
};

class ExtCsd {
 public:
  ExtCsd() { bytes_.fill(0); }
  explicit ExtCsd(const std::array<uint8_t, kExtCsdSize>& bytes) : bytes_(bytes) {}

  uint8_t operator[](size_t index) const { return bytes_[index]; }
  const std::array<uint8_t, kExtCsdSize>& bytes() const { return bytes_; }
  std::array<uint8_t, kExtCsdSize>& mutable_bytes() { return bytes_; }

  uint8_t revision() const { return bytes_[field::kExtCsdRev]; }
  // "5.1" for EXT_CSD_REV 8 ... "4.0" for 0, "revision N" past what is known.
  std::string revision_name() const;
  uint64_t boot_area_size() const { return bytes_[field::kBootSizeMult] * kBootSizeUnit; }
  uint64_t rpmb_size() const { return bytes_[field::kRpmbSizeMult] * kBootSizeUnit; }
  // SEC_COUNT: 512-byte sectors of the user area.
  uint32_t sector_count() const;
  // GP_SIZE_MULT of general purpose partition `n` (1..4), in units of the
  // write protect group; 0: not defined.
  uint32_t gp_size_mult(int n) const;
  PartitionConfig partition_config() const { return PartitionConfig::Decode(bytes_[field::kPartitionConfig]); }
  BootBus boot_bus() const { return BootBus::Decode(bytes_[field::kBootBusConditions]); }
  bool supports_ddr_boot() const { return bytes_[field::kBootInfo] & 0x02; }
  bool supports_hs_boot() const { return bytes_[field::kBootInfo] & 0x04; }
  // BOOT_WP_STATUS [174] of boot area `n` (0 or 1): 0 none, 1 power-on, 2 permanent.
  uint8_t boot_wp_status(int n) const { return (bytes_[field::kBootWpStatus] >> (2 * n)) & 3; }

 private:
  std::array<uint8_t, kExtCsdSize> bytes_;
};

// The PARTITION_CONFIG a host may ask this card for, or why not: reserved
// values, boot areas on a card without them (BOOT_SIZE_MULT 0), an RPMB or
// GP partition the card does not have, a card older than EXT_CSD_REV 3
// (v4.3, where boot areas came), PARTITION_CONFIG locked by BOOT_CONFIG_PROT.
Status CheckPartitionConfig(const ExtCsd& card, const PartitionConfig& want);
// The same for BOOT_BUS_CONDITIONS: reserved widths and modes, DDR or
// high-speed boot on a card whose BOOT_INFO says it cannot.
Status CheckBootBus(const ExtCsd& card, const BootBus& want);

// Human names of the values, for reports and messages.
std::string BootPartitionName(uint8_t value);    // "boot area 1", "user area", "none", "reserved (4)"
std::string PartitionAccessName(uint8_t value);  // "user area", "boot area 1", "RPMB", "GP1"...
std::string BootBusWidthName(uint8_t value);     // "x1", "x4", "x8", "reserved (3)"
std::string BootModeName(uint8_t value);         // "sdr", "sdr-hs", "ddr", "reserved (3)"
std::string BootWpName(uint8_t value);           // "none", "power-on", "permanent"

}  // namespace flashpipe::mmc
