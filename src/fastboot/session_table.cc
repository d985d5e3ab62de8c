// Session: `flash gpt` and `oem format`, the disk's partition table
// replaced while serving (session.h; the checks and the writes are
// partition/table_change.h's, the reload Storage::ChangeTable's).
#include <algorithm>
#include <chrono>

#include "base/log.h"
#include "fastboot/reason_text.h"
#include "fastboot/session.h"
#include "partition/table_diff.h"
#include "wire/protocol.h"

namespace flashpipe::fastboot {
namespace {

using Clock = std::chrono::steady_clock;

Status Locked(std::string_view what) {
  return InvalidArgument(fmt::format("{}: locked (fastboot flashing unlock)", what));
}

}  // namespace

// While critical partitions are locked, a table may not move, resize or
// drop one (a new table could otherwise replace a bootloader partition
// that `flash` would refuse to touch).
Status Session::ApproveTable(const partition::PartitionOutcome& plan) {
  if (!device_->state().critical_locked() || !plan.old) return Status::Ok();
  for (const partition::Partition& was : plan.old->partitions) {
    if (!device_->IsCritical(was.name)) continue;
    auto now = std::find_if(plan.table.partitions.begin(), plan.table.partitions.end(),
                            [&](const partition::Partition& p) { return p.name == was.name; });
    const uint64_t bytes = was.size * plan.old->sector_size, at = was.start * plan.old->sector_size;
    if (now == plan.table.partitions.end() || now->start * plan.table.sector_size != at ||
        now->size * plan.table.sector_size != bytes) {
      return InvalidArgument(fmt::format("critical partition '{}': flashing unlock_critical (the new table moves, "
                                         "resizes or drops it)", was.name));
    }
  }
  return Status::Ok();
}

// The download is the table: a layout text or a GPT image.
Result<std::string> Session::DoFlashGpt() {
  if (device_->state().locked()) return Locked("flash gpt");  // the command table refuses it first
  std::vector<uint8_t> scratch;
  FP_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, device_->DownloadedBytes(&scratch));
  return ChangeTable(bytes, "flash gpt");
}

Result<std::string> Session::DoOemFormat(const std::string& arg) {
  if (device_->state().locked()) return Locked("oem format");
  if (!arg.empty()) return InvalidArgument("oem format: takes no argument (serve --layout FILE)");
  const DeviceConfig& config = device_->config();
  if (config.layout.empty()) return Unsupported("oem format: no layout (start serve with --layout FILE)");
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(config.layout.data()), config.layout.size());
  return ChangeTable(bytes, "oem format " + config.layout_name);
}

Result<std::string> Session::ChangeTable(std::span<const uint8_t> source, std::string_view source_name) {
  // No flash may land in a partition the new table moves, and the super's
  // metadata must be settled before its partitions are dropped.
  FP_RETURN_IF_ERROR(device_->WaitWritesAndSuper().WithContext("a write-behind flash before the table change"));
  const auto start = Clock::now();
  std::vector<std::string> warnings;
  auto changed = device_->storage().ChangeTable(source, source_name, device_->state().slot(), &warnings,
                                                [this](const partition::PartitionOutcome& plan) {
                                                  return ApproveTable(plan);
                                                });
  device_->ForgetStaged();
  if (!changed.ok()) return changed.status();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  const partition::PartitionOutcome& out = *changed;
  std::vector<std::string> lines = partition::DescribeChanges(out.old, out.table);
  if (out.kernel) lines.push_back(out.kernel->Describe());
  for (const std::string& n : out.notes) lines.push_back(n);
  for (const std::string& w : warnings) lines.push_back(w);
  for (const std::string& line : lines) {
    // Partition names come from the disk's old table and the client's layout.
    for (const auto& piece : WrapWords(log::Printable(line, 1024), wire::kMaxMessage)) {
      if (!SendInfo(piece).ok()) return transport_error_;
    }
  }
  log::Info("{}: {}: table written, {} partitions, {} ms (writes {} us){}", transport_->peer(), source_name,
            out.table.partitions.size(), ms, out.write_took.count(),
            out.kernel ? "; kernel: " + out.kernel->Describe() : "");
  return fmt::format("table written, {} partitions, {} ms", out.table.partitions.size(), ms);
}

}  // namespace flashpipe::fastboot
