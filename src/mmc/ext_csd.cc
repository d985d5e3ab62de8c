// EXT_CSD fields decoded and the rules for the values a host may write.
#include "mmc/ext_csd.h"

namespace flashpipe::mmc {
namespace {

// EXT_CSD_REV [192] to the JEDEC version it stands for; 4 is not used.
constexpr const char* kRevisionNames[] = {"4.0", "4.1", "4.2", "4.3", nullptr, "4.41", "4.5", "5.0", "5.1"};

constexpr uint8_t kRevBootAreas = 3;    // v4.3: boot areas, PARTITION_CONFIG, BOOT_BUS_CONDITIONS
constexpr uint8_t kRevPartitions = 5;   // v4.41: GP partitions, RPMB, BOOT_WP, BOOT_CONFIG_PROT

constexpr uint8_t kBootPartitionUser = 7;
constexpr uint8_t kAccessRpmb = 3;
constexpr uint8_t kAccessGp1 = 4;

std::string Reserved(uint8_t value) { return fmt::format("reserved ({})", value); }

}  // namespace

PartitionConfig PartitionConfig::Decode(uint8_t value) {
  return {.boot_ack = (value & 0x40) != 0,
          .boot_partition = static_cast<uint8_t>((value >> 3) & 7),
          .partition_access = static_cast<uint8_t>(value & 7)};
}

uint8_t PartitionConfig::Encode() const {
  return static_cast<uint8_t>((boot_ack ? 0x40 : 0) | (boot_partition & 7) << 3 | (partition_access & 7));
}

BootBus BootBus::Decode(uint8_t value) {
  return {.width = static_cast<uint8_t>(value & 3),
          .retain = (value & 0x04) != 0,
          .mode = static_cast<uint8_t>((value >> 3) & 3)};
}

uint8_t BootBus::Encode() const {
  return static_cast<uint8_t>((width & 3) | (retain ? 0x04 : 0) | (mode & 3) << 3);
}

std::string ExtCsd::revision_name() const {
  uint8_t rev = revision();
  if (rev < std::size(kRevisionNames) && kRevisionNames[rev] != nullptr) return kRevisionNames[rev];
  return fmt::format("revision {}", rev);
}

uint32_t ExtCsd::sector_count() const {
  const uint8_t* p = &bytes_[field::kSecCount];
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint32_t ExtCsd::gp_size_mult(int n) const {
  const uint8_t* p = &bytes_[field::kGpSizeMult + 3 * (n - 1)];
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16;
}

Status CheckPartitionConfig(const ExtCsd& card, const PartitionConfig& want) {
  if (card.revision() < kRevBootAreas) {
    return Unsupported(fmt::format("EXT_CSD_REV [192] is {} (eMMC {}): PARTITION_CONFIG [179] came with 4.3",
                                   card.revision(), card.revision_name()));
  }
  if (want.boot_partition > 2 && want.boot_partition != kBootPartitionUser) {
    return InvalidArgument(fmt::format(
        "BOOT_PARTITION_ENABLE {} is reserved (PARTITION_CONFIG [179] bits 5:3: 0 none, 1 boot area 1, 2 boot area 2, "
        "7 user area)", want.boot_partition));
  }
  if (want.partition_access > 7) return InvalidArgument(fmt::format("PARTITION_ACCESS {} is not 0-7", want.partition_access));
  bool wants_boot_area = want.boot_partition == 1 || want.boot_partition == 2 || want.partition_access == 1 ||
                         want.partition_access == 2;
  if (wants_boot_area && card.boot_area_size() == 0) {
    return Unsupported("the card has no boot areas (BOOT_SIZE_MULT [226] is 0)");
  }
  if (want.partition_access == kAccessRpmb && card.rpmb_size() == 0) {
    return Unsupported("the card has no RPMB partition (RPMB_SIZE_MULT [168] is 0)");
  }
  if (want.partition_access >= kAccessGp1) {
    int gp = want.partition_access - kAccessGp1 + 1;
    if (card.revision() < kRevPartitions || card.gp_size_mult(gp) == 0) {
      return Unsupported(fmt::format("the card has no general purpose partition {} (GP_SIZE_MULT_{} [{}] is 0)", gp, gp,
                                     field::kGpSizeMult + 3 * (gp - 1)));
    }
  }
  PartitionConfig now = card.partition_config();
  uint8_t prot = card[field::kBootConfigProt];
  bool boot_fields_change = now.boot_ack != want.boot_ack || now.boot_partition != want.boot_partition;
  if (boot_fields_change && card.revision() >= kRevPartitions && (prot & 0x11) != 0) {
    return Unsupported(fmt::format("BOOT_ACK and BOOT_PARTITION_ENABLE are locked {} (BOOT_CONFIG_PROT [178] is 0x{:02x})",
                                   prot & 0x10 ? "permanently" : "until the next power cycle", prot));
  }
  return Status::Ok();
}

Status CheckBootBus(const ExtCsd& card, const BootBus& want) {
  if (card.revision() < kRevBootAreas) {
    return Unsupported(fmt::format("EXT_CSD_REV [192] is {} (eMMC {}): BOOT_BUS_CONDITIONS [177] came with 4.3",
                                   card.revision(), card.revision_name()));
  }
  if (card.boot_area_size() == 0) return Unsupported("the card has no boot areas (BOOT_SIZE_MULT [226] is 0)");
  if (want.width > 2) {
    return InvalidArgument(fmt::format("BOOT_BUS_WIDTH {} is reserved (BOOT_BUS_CONDITIONS [177] bits 1:0: 0 x1, 1 x4, 2 x8)",
                                       want.width));
  }
  if (want.mode > 2) {
    return InvalidArgument(fmt::format(
        "BOOT_MODE {} is reserved (BOOT_BUS_CONDITIONS [177] bits 4:3: 0 SDR compatible, 1 SDR high speed, 2 DDR)",
        want.mode));
  }
  if (want.mode == 1 && !card.supports_hs_boot()) {
    return Unsupported(fmt::format("the card does not boot with high-speed timing (BOOT_INFO [228] is 0x{:02x}, HS_BOOT_MODE "
                                   "bit 2 clear)", card[field::kBootInfo]));
  }
  if (want.mode == 2 && !card.supports_ddr_boot()) {
    return Unsupported(fmt::format("the card does not boot in DDR mode (BOOT_INFO [228] is 0x{:02x}, DDR_BOOT_MODE bit 1 clear)",
                                   card[field::kBootInfo]));
  }
  return Status::Ok();
}

std::string BootPartitionName(uint8_t value) {
  switch (value) {
    case 0: return "none";
    case 1: return "boot area 1";
    case 2: return "boot area 2";
    case kBootPartitionUser: return "user area";
    default: return Reserved(value);
  }
}

std::string PartitionAccessName(uint8_t value) {
  switch (value) {
    case 0: return "user area";
    case 1: return "boot area 1";
    case 2: return "boot area 2";
    case kAccessRpmb: return "RPMB";
    default: return value < 8 ? fmt::format("GP{}", value - kAccessGp1 + 1) : Reserved(value);
  }
}

std::string BootBusWidthName(uint8_t value) {
  constexpr const char* kNames[] = {"x1", "x4", "x8"};
  return value < 3 ? kNames[value] : Reserved(value);
}

std::string BootModeName(uint8_t value) {
  constexpr const char* kNames[] = {"sdr", "sdr-hs", "ddr"};
  return value < 3 ? kNames[value] : Reserved(value);
}

std::string BootWpName(uint8_t value) {
  constexpr const char* kNames[] = {"none", "power-on", "permanent"};
  return value < 3 ? kNames[value] : Reserved(value);
}

}  // namespace flashpipe::mmc
