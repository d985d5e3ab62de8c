// What `flashpipe mmc` prints: the EXT_CSD fields that boot a board, as text
// and as the --json reports (docs/schema/mmc-extcsd-report.schema.json and
// mmc-switch-report.schema.json), and the arguments of partconf and bootbus in
// U-Boot's spelling (numbers) or by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "mmc/boot_area.h"
#include "mmc/card.h"
#include "mmc/ext_csd.h"

namespace flashpipe::mmc {

struct CardReport {
  std::string device;                    // "/dev/mmcblk0"
  ExtCsd ext_csd;
  std::vector<BootAreaInfo> boot_areas;  // as sysfs lists them
};

// Several lines, one per field, each naming its JEDEC index.
std::string DescribeCard(const CardReport& r);
std::string CardJson(const CardReport& r);

// "/dev/mmcblk0: PARTITION_CONFIG [179] 0x00 -> 0x48 (...), read back"
std::string DescribeChange(const std::string& device, const FieldChange& c);
std::string ChangeJson(const std::string& device, const FieldChange& c);

// A field's value in words: "BOOT_ACK 1, BOOT_PARTITION_ENABLE 1 (boot area 1), PARTITION_ACCESS 0 (user area)".
std::string DescribeField(uint8_t index, uint8_t value);

// partconf BOOT_ACK BOOT_PARTITION [PARTITION_ACCESS]: numbers as U-Boot's
// `mmc partconf` takes them (BOOT_ACK 0/1; BOOT_PARTITION 0-7; ACCESS 0-7),
// BOOT_PARTITION also as none, boot0, boot1, user.
Result<PartConfRequest> ParsePartConf(std::string_view ack, std::string_view boot_partition,
                                      std::string_view access /* empty: keep */);
// bootbus WIDTH RESET MODE as U-Boot's `mmc bootbus` takes them (0-2, 0-1,
// 0-2), or as x1/x4/x8, x1/retain, sdr/sdr-hs/ddr (mmc-utils' single_backward,
// single_hs and dual too).
Result<BootBus> ParseBootBus(std::string_view width, std::string_view reset, std::string_view mode);

}  // namespace flashpipe::mmc
