// flashpipe partition TARGET LAYOUT | TARGET --dump: GPT layouts written and
// printed; the job is src/partition/partition_job.h.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "base/fd_io.h"
#include "base/unique_fd.h"
#include "partition/partition_job.h"
#include "partition/types.h"
#include "tools/commands.h"
#include "tools/layout_file.h"
#include "tools/flags.h"

namespace flashpipe::tools {
namespace {

std::string Footer() {
  std::string types = "Types by name:", line;
  for (const auto& [name, guid] : partition::KnownTypes()) {
    if (types.size() - line.size() + name.size() > 100) line = types += "\n ";
    types += " " + name + ",";
  }
  types.back() = ';';
  return "LAYOUT is an sfdisk script (what `sfdisk --dump` prints: label: gpt, label-id, first-lba, last-lba,\n"
         "sector-size, grain, then lines `[NODE :] start=, size=, type=, uuid=, name=, attrs=`; numbers are sectors\n"
         "unless they carry a suffix) or a U-Boot $partitions string (`uuid_disk=...;name=boot,start=1MiB,\n"
         "size=64MiB,uuid=...,type=...,bootable;name=rootfs,size=-;`; numbers are bytes). Sizes take K, M, G, T\n"
         "(binary, also KiB, MiB...); no size, `-` or `+` is the rest of the disk (last partition only). A start\n"
         "not given follows the previous partition, aligned to 1 MiB (sfdisk's `grain:` changes it); GUIDs not\n"
         "given are random; the type defaults to linux.\n" +
         types + "\n"
         "sfdisk's L, S, U, H, R, V; sgdisk's codes of these (8300, ef00, a006...); in U-Boot strings also U-Boot's\n"
         "names (system = EFI system partition). Or a GUID.\n\n"
         "Nothing is written unless every check passes: the layout fits the target, no overlaps, names unique and\n"
         "at most 36 UTF-16 units, the target not in use (mounted, held, open exclusively; a file behind a loop\n"
         "device in use). The table is written backup first, then the primary, each part flushed, so a power cut\n"
         "leaves the old table, the new one or no valid table, never a mix. On a block device the kernel then\n"
         "re-reads the table (BLKRRPART, or BLKPG per partition while some are open) and the partition nodes\n"
         "are waited for: no reboot.";
}

void PrintNotes(const std::vector<std::string>& notes) {
  for (const auto& n : notes) std::fprintf(stderr, "flashpipe partition: note: %s\n", n.c_str());
}

std::string Count(size_t n) { return fmt::format("{} partition{}", n, n == 1 ? "" : "s"); }

int Dump(const std::string& target, partition::LayoutFormat format) {
  std::vector<std::string> notes;
  auto text = partition::DumpPartitions(target, format, &notes);
  PrintNotes(notes);
  if (!text.ok()) return ExitWith("partition", text.status());
  std::fputs(text->c_str(), stdout);
  return ExitWith("partition", FlushStdout());
}

int Write(partition::PartitionRequest& r) {
  auto o = partition::WritePartitions(r);
  if (!o.ok()) return ExitWith("partition", o.status());
  PrintNotes(o->notes);
  std::string was = o->old ? Count(o->old->partitions.size()) : "no valid table";
  if (r.dry_run) {
    std::vector<std::string> notes;
    auto text = partition::FormatLayout(o->table, partition::LayoutFormat::kSfdisk, r.target, &notes);
    if (!text.ok()) return ExitWith("partition", text.status());
    std::fputs(text->c_str(), stdout);
    std::fprintf(stderr, "flashpipe partition: %s: dry run, nothing written (now: %s)\n", r.target.c_str(), was.c_str());
    return ExitWith("partition", FlushStdout());
  }
  std::printf("%s: GPT written, %s (was: %s), %.3f s\n", r.target.c_str(), Count(o->table.partitions.size()).c_str(),
              was.c_str(), o->write_took.count() / 1e6);
  if (o->kernel) std::printf("%s: kernel %s\n", r.target.c_str(), o->kernel->Describe().c_str());
  return ExitWith("partition", FlushStdout());
}

}  // namespace

int RunPartition(int argc, char** argv) {
  CLI::App app{"Write a GPT from a layout (sfdisk script or U-Boot $partitions string), or print the table", CommandName(argv[0])};
  partition::PartitionRequest r;
  std::string layout_path, format_name = "auto";
  bool dump = false;
  double wait_s = 10;
  app.add_option("TARGET", r.target, "a block device or an existing image file")->required();
  app.add_option("LAYOUT", layout_path, "the layout file (- for stdin); not with --dump");
  app.add_flag("--dump", dump, "print the table on TARGET as a layout (sfdisk unless --format uboot)");
  app.add_option("--format", format_name,
                 "layout format: auto (read: a text starting uuid_disk=, or name= and holding a ';', is U-Boot's, else sfdisk's; "
                 "--dump: sfdisk), sfdisk, uboot");
  app.add_flag("--force", r.force,
               "write although the target is in use; a partition in use must still keep its start and size");
  app.add_flag("-n,--dry-run", r.dry_run, "check everything and print the table that would be written; write nothing");
  app.add_option("--kernel-wait", wait_s, "seconds to wait for the kernel's partition nodes (default 10)")
      ->check(CLI::Range(0.0, 600.0));
  app.footer(Footer());
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  auto format = partition::ParseLayoutFormat(format_name);
  if (!format.ok()) return UsageError(app, format.status());
  if (dump) {
    if (!layout_path.empty()) return UsageError(app, InvalidArgument("--dump prints the table: give no LAYOUT"));
    return Dump(r.target, *format);
  }
  if (layout_path.empty()) return UsageError(app, InvalidArgument("give a LAYOUT file to write, or --dump"));
  auto text = ReadLayoutFile(layout_path);
  if (!text.ok()) return ExitWith("partition", text.status());
  r.layout = std::move(*text);
  r.layout_name = layout_path == "-" ? "stdin" : layout_path;
  r.format = *format;
  r.kernel_wait = std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
  return Write(r);
}

}  // namespace flashpipe::tools
