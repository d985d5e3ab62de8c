// mmc extcsd|partconf|bootbus DEVICE ...: an eMMC's boot settings in its
// EXT_CSD, read with SEND_EXT_CSD and written with SWITCH through
// MMC_IOC_CMD (src/mmc), as mmc-utils and U-Boot's `mmc partconf` and
// `mmc bootbus` do; every write is checked against what the card reports
// and read back.
#include <cstdio>

#include "mmc/boot_area.h"
#include "mmc/card.h"
#include "mmc/ext_csd_report.h"
#include "mmc/mmc_device.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace flashpipe::tools {
namespace {

constexpr const char* kFooter =
    "DEVICE is the card, /dev/mmcblkN; a boot area (/dev/mmcblkNbootM) stands for its card. The commands need root\n"
    "(CAP_SYS_RAWIO). An SD card has no EXT_CSD: they fail and say so.\n\n"
    "partconf BOOT_ACK BOOT_PARTITION [PARTITION_ACCESS] sets PARTITION_CONFIG [179] as U-Boot's `mmc partconf`:\n"
    "  BOOT_ACK 0/1 (bit 6); BOOT_PARTITION (bits 5:3) 0 none, 1 boot0 (boot area 1), 2 boot1, 7 user area\n"
    "  (3-6 are reserved and refused); PARTITION_ACCESS (bits 2:0) 0 user, 1 boot0, 2 boot1, 3 RPMB, 4-7 GP1-4,\n"
    "  kept as the card has it when not given (as mmc-utils' `bootpart enable`).\n"
    "bootbus WIDTH RESET MODE sets BOOT_BUS_CONDITIONS [177] as U-Boot's `mmc bootbus`: WIDTH (bits 1:0) 0 x1\n"
    "  (x4 in DDR), 1 x4, 2 x8; RESET (bit 2) 0 back to x1 after boot, 1 retain; MODE (bits 4:3) 0 sdr\n"
    "  (backward-compatible timing), 1 sdr-hs, 2 ddr. The names x1/x4/x8, retain, sdr/sdr-hs/ddr work too.\n"
    "Refused before anything is sent: reserved values, a card without boot areas (BOOT_SIZE_MULT [226] 0), an\n"
    "RPMB or GP partition it lacks, HS or DDR boot its BOOT_INFO [228] does not offer, boot bits locked by\n"
    "BOOT_CONFIG_PROT [178]. After the SWITCH, EXT_CSD is read back: a value the card did not take is an error.";

struct MmcArgs {
  std::string device, json;
  std::vector<std::string> values;
};

Status Print(const std::string& json_path, const std::string& json, const std::string& text) {
  if (!json_path.empty()) {
    if (json_path != "-") std::fputs(text.c_str(), stdout);
    else std::fputs(text.c_str(), stderr);
    FP_RETURN_IF_ERROR(WriteJson(json_path, json));
  } else {
    std::fputs(text.c_str(), stdout);
  }
  return FlushStdout();
}

Status ExtCsd(const MmcArgs& a) {
  FP_ASSIGN_OR_RETURN(auto dev, mmc::MmcIoctlDevice::Open(a.device, {.writable = false}));
  FP_ASSIGN_OR_RETURN(mmc::ExtCsd e, mmc::ReadExtCsd(*dev));
  mmc::CardReport r{.device = dev->name(), .ext_csd = e, .boot_areas = mmc::ListBootAreas(dev->block_name())};
  return Print(a.json, mmc::CardJson(r), mmc::DescribeCard(r));
}

// One SWITCH of a field `set` writes, then read back.
template <typename Set>
Status Write(const MmcArgs& a, Set set) {
  FP_ASSIGN_OR_RETURN(auto dev, mmc::MmcIoctlDevice::Open(a.device, {.writable = true}));
  FP_ASSIGN_OR_RETURN(mmc::FieldChange c, set(*dev));
  return Print(a.json, mmc::ChangeJson(dev->name(), c), mmc::DescribeChange(dev->name(), c));
}

}  // namespace

int RunMmc(int argc, char** argv) {
  CLI::App app{"eMMC boot settings in EXT_CSD through MMC_IOC_CMD: print them, set PARTITION_CONFIG (boot area, "
               "boot ack) and BOOT_BUS_CONDITIONS, as mmc-utils and U-Boot's mmc partconf/bootbus",
               CommandName(argv[0])};
  app.require_subcommand(1);
  app.footer(kFooter);
  MmcArgs a;
  auto* extcsd = app.add_subcommand("extcsd", "print the card's revision, sizes and boot fields (EXT_CSD [192], [226], "
                                              "[179], [177], [173], [174], ...) and its boot areas' force_ro");
  auto* partconf = app.add_subcommand("partconf", "set PARTITION_CONFIG [179]: DEVICE BOOT_ACK BOOT_PARTITION "
                                                  "[PARTITION_ACCESS] (U-Boot's mmc partconf)");
  auto* bootbus = app.add_subcommand("bootbus", "set BOOT_BUS_CONDITIONS [177]: DEVICE WIDTH RESET MODE (U-Boot's "
                                                "mmc bootbus)");
  for (CLI::App* sub : {extcsd, partconf, bootbus}) {
    sub->add_option("DEVICE", a.device, "the card, /dev/mmcblkN")->required();
    AddJsonFlag(*sub, a.json, sub == extcsd ? "the fields" : "the field before and after");
  }
  partconf->add_option("VALUES", a.values, "BOOT_ACK BOOT_PARTITION [PARTITION_ACCESS]")->required()->expected(2, 3);
  bootbus->add_option("VALUES", a.values, "BOOT_BUS_WIDTH RESET_BOOT_BUS_WIDTH BOOT_MODE")->required()->expected(3);
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  if (extcsd->parsed()) return ExitWith("mmc extcsd", ExtCsd(a));
  if (partconf->parsed()) {
    auto pc = mmc::ParsePartConf(a.values[0], a.values[1], a.values.size() > 2 ? a.values[2] : "");
    if (!pc.ok()) return UsageError(app, pc.status());
    return ExitWith("mmc partconf", Write(a, [&](mmc::MmcDevice& d) { return mmc::SetPartitionConfig(d, *pc); }));
  }
  auto bb = mmc::ParseBootBus(a.values[0], a.values[1], a.values[2]);
  if (!bb.ok()) return UsageError(app, bb.status());
  return ExitWith("mmc bootbus", Write(a, [&](mmc::MmcDevice& d) { return mmc::SetBootBus(d, *bb); }));
}

}  // namespace flashpipe::tools
