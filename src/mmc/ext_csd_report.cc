// `flashpipe mmc` output and arguments.
#include "mmc/ext_csd_report.h"

#include <initializer_list>
#include <utility>

#include "base/json.h"
#include "base/units.h"

namespace flashpipe::mmc {
namespace {

std::string Size(uint64_t bytes) {
  if (bytes >= (1u << 30)) return fmt::format("{:.2f} GiB", bytes / double(1u << 30));
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} KiB", bytes >> 10);
}

// A word from `names`, or a number up to `max`.
Result<uint8_t> Choice(std::string_view what, std::string_view text, unsigned max,
                       std::initializer_list<std::pair<std::string_view, uint8_t>> names) {
  for (const auto& [name, value] : names)
    if (text == name) return value;
  auto n = ParseNumber(text);
  if (!n.ok() || *n > max) {
    std::string words;
    for (const auto& [name, value] : names) words += fmt::format("{}{}", words.empty() ? "" : ", ", name);
    return InvalidArgument(fmt::format("{} '{}': give 0-{}{}{}", what, text, max, words.empty() ? "" : " or ", words));
  }
  return static_cast<uint8_t>(*n);
}

std::string Hex(uint8_t v) { return fmt::format("0x{:02x}", v); }

}  // namespace

std::string DescribeField(uint8_t index, uint8_t value) {
  if (index == field::kPartitionConfig) {
    auto p = PartitionConfig::Decode(value);
    return fmt::format("BOOT_ACK {}, BOOT_PARTITION_ENABLE {} ({}), PARTITION_ACCESS {} ({})", int(p.boot_ack),
                       p.boot_partition, BootPartitionName(p.boot_partition), p.partition_access,
                       PartitionAccessName(p.partition_access));
  }
  if (index == field::kBootBusConditions) {
    auto b = BootBus::Decode(value);
    return fmt::format("BOOT_BUS_WIDTH {} ({}), RESET_BOOT_BUS_CONDITIONS {} ({}), BOOT_MODE {} ({})", b.width,
                       BootBusWidthName(b.width), int(b.retain), b.retain ? "retain after boot" : "x1 after boot", b.mode,
                       BootModeName(b.mode));
  }
  return Hex(value);
}

std::string DescribeCard(const CardReport& r) {
  const ExtCsd& e = r.ext_csd;
  std::string out = fmt::format("{}: eMMC {} (EXT_CSD_REV [192] {}), user area {} (SEC_COUNT [215:212] {})\n", r.device,
                                e.revision_name(), e.revision(), Size(uint64_t{e.sector_count()} * 512), e.sector_count());
  out += fmt::format("  BOOT_SIZE_MULT [226] {}: {} per boot area{}\n", e[field::kBootSizeMult],
                     Size(e.boot_area_size()), e.boot_area_size() ? "" : " (no boot areas)");
  out += fmt::format("  RPMB_SIZE_MULT [168] {}: {}\n", e[field::kRpmbSizeMult], Size(e.rpmb_size()));
  out += fmt::format("  PARTITION_CONFIG [179] {}: {}\n", Hex(e[field::kPartitionConfig]),
                     DescribeField(field::kPartitionConfig, e[field::kPartitionConfig]));
  out += fmt::format("  BOOT_BUS_CONDITIONS [177] {}: {}\n", Hex(e[field::kBootBusConditions]),
                     DescribeField(field::kBootBusConditions, e[field::kBootBusConditions]));
  out += fmt::format("  BOOT_INFO [228] {}: DDR boot {}, high-speed boot {}\n", Hex(e[field::kBootInfo]),
                     e.supports_ddr_boot() ? "yes" : "no", e.supports_hs_boot() ? "yes" : "no");
  out += fmt::format("  BOOT_CONFIG_PROT [178] {}, BOOT_WP [173] {}\n", Hex(e[field::kBootConfigProt]), Hex(e[field::kBootWp]));
  out += fmt::format("  BOOT_WP_STATUS [174] {}: boot area 1 {}, boot area 2 {}\n", Hex(e[field::kBootWpStatus]),
                     BootWpName(e.boot_wp_status(0)), BootWpName(e.boot_wp_status(1)));
  out += fmt::format("  PARTITION_SUPPORT [160] {}, PARTITION_SETTING_COMPLETED [155] {}\n", Hex(e[field::kPartitionSupport]),
                     e[field::kPartitionSettingCompleted]);
  for (const BootAreaInfo& b : r.boot_areas) {
    out += fmt::format("  /dev/{}: force_ro {}\n", b.name, int(b.force_ro));
  }
  return out;
}

std::string CardJson(const CardReport& r) {
  const ExtCsd& e = r.ext_csd;
  auto pc = e.partition_config();
  auto bb = e.boot_bus();
  std::string areas;
  for (const BootAreaInfo& b : r.boot_areas) {
    areas += fmt::format("{}{{\"device\": {}, \"force_ro\": {}}}", areas.empty() ? "" : ", ", JsonString("/dev/" + b.name),
                         b.force_ro);
  }
  return fmt::format(
      "{{{}, \"device\": {}, \"ext_csd_rev\": {}, \"version\": {}, \"sectors\": {}, \"boot_area_size\": {}, "
      "\"rpmb_size\": {}, "
      "\"partition_config\": {{\"value\": {}, \"boot_ack\": {}, \"boot_partition\": {}, \"partition_access\": {}}}, "
      "\"boot_bus_conditions\": {{\"value\": {}, \"width\": {}, \"retain\": {}, \"mode\": {}}}, "
      "\"boot_info\": {}, \"boot_config_prot\": {}, \"boot_wp\": {}, \"boot_wp_status\": [{}, {}], "
      "\"partition_support\": {}, \"partition_setting_completed\": {}, \"boot_areas\": [{}]}}",
      JsonSchemaMembers("mmc-extcsd", 1), JsonString(r.device), e.revision(), JsonString(e.revision_name()), e.sector_count(),
      e.boot_area_size(), e.rpmb_size(), e[field::kPartitionConfig], pc.boot_ack, pc.boot_partition, pc.partition_access,
      e[field::kBootBusConditions], bb.width, bb.retain, bb.mode, e[field::kBootInfo], e[field::kBootConfigProt],
      e[field::kBootWp], JsonString(BootWpName(e.boot_wp_status(0))), JsonString(BootWpName(e.boot_wp_status(1))),
      e[field::kPartitionSupport], e[field::kPartitionSettingCompleted], areas);
}

namespace {
const char* FieldName(uint8_t index) {
  return index == field::kPartitionConfig ? "PARTITION_CONFIG" : index == field::kBootBusConditions ? "BOOT_BUS_CONDITIONS" : "EXT_CSD";
}
}  // namespace

std::string DescribeChange(const std::string& device, const FieldChange& c) {
  uint8_t now = c.after[c.index];
  if (!c.changed()) {
    return fmt::format("{}: {} [{}] is {} already ({}); nothing sent\n", device, FieldName(c.index), c.index, Hex(now),
                       DescribeField(c.index, now));
  }
  return fmt::format("{}: {} [{}] {} -> {} ({}), read back\n", device, FieldName(c.index), c.index, Hex(c.before[c.index]),
                     Hex(now), DescribeField(c.index, now));
}

std::string ChangeJson(const std::string& device, const FieldChange& c) {
  return fmt::format("{{{}, \"device\": {}, \"field\": {}, \"index\": {}, \"before\": {}, \"after\": {}, \"changed\": {}}}",
                     JsonSchemaMembers("mmc-switch", 1), JsonString(device), JsonString(FieldName(c.index)), c.index,
                     c.before[c.index], c.after[c.index], c.changed());
}

Result<PartConfRequest> ParsePartConf(std::string_view ack, std::string_view boot_partition, std::string_view access) {
  PartConfRequest r;
  FP_ASSIGN_OR_RETURN(uint8_t a, Choice("BOOT_ACK", ack, 1, {}));
  r.boot_ack = a != 0;
  FP_ASSIGN_OR_RETURN(r.boot_partition, Choice("BOOT_PARTITION", boot_partition, 7,
                                               {{"none", 0}, {"boot0", 1}, {"boot1", 2}, {"user", 7}}));
  if (!access.empty()) {
    FP_ASSIGN_OR_RETURN(r.partition_access, Choice("PARTITION_ACCESS", access, 7, {{"user", 0}, {"boot0", 1}, {"boot1", 2}}));
  }
  return r;
}

Result<BootBus> ParseBootBus(std::string_view width, std::string_view reset, std::string_view mode) {
  BootBus b;
  FP_ASSIGN_OR_RETURN(b.width, Choice("BOOT_BUS_WIDTH", width, 2, {{"x1", 0}, {"x4", 1}, {"x8", 2}}));
  FP_ASSIGN_OR_RETURN(uint8_t retain, Choice("RESET_BOOT_BUS_WIDTH", reset, 1, {{"x1", 0}, {"retain", 1}}));
  b.retain = retain != 0;
  FP_ASSIGN_OR_RETURN(b.mode, Choice("BOOT_MODE", mode, 2,
                                     {{"sdr", 0}, {"sdr-hs", 1}, {"ddr", 2}, {"single_backward", 0}, {"single_hs", 1},
                                      {"dual", 2}}));
  return b;
}

}  // namespace flashpipe::mmc
