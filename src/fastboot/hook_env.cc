#include "fastboot/hook_env.h"

#include <fmt/format.h>

namespace flashpipe::fastboot {

std::vector<std::string> HookEnvironment(const HookContext& c) {
  std::string slot = c.slot != 0 ? std::string(1, c.slot) : std::string();
  std::vector<std::string> env = {
      fmt::format("FLASHPIPE_HOOK={}", c.hook),
      fmt::format("FLASHPIPE_SERIALNO={}", c.serialno),
      fmt::format("FLASHPIPE_PRODUCT={}", c.product),
      fmt::format("FLASHPIPE_SLOT={}", slot),
      fmt::format("FLASHPIPE_SLOT_SUFFIX={}", slot.empty() ? "" : "_" + slot),
      fmt::format("FLASHPIPE_LOCKED={}", c.locked ? 1 : 0),
      fmt::format("FLASHPIPE_CRITICAL_LOCKED={}", c.critical_locked ? 1 : 0),
  };
  if (c.partition != nullptr) {
    env.push_back(fmt::format("FLASHPIPE_PARTITION={}", c.partition->name));
    env.push_back(fmt::format("FLASHPIPE_PARTITION_PATH={}", c.partition_path));
    env.push_back(fmt::format("FLASHPIPE_PARTITION_OFFSET={}", c.partition->offset));
    env.push_back(fmt::format("FLASHPIPE_PARTITION_SIZE={}", c.partition->size));
  }
  env.insert(env.end(), c.extra.begin(), c.extra.end());
  return env;
}

}  // namespace flashpipe::fastboot
