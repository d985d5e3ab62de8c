// lp make: builds liblp metadata from flags the way AOSP lpmake does, and
// writes a super_empty.img (no --image), or a whole super image with the
// partition images in place (--image, or --force-full-image), raw or
// --sparse. Sizes take K/M/G suffixes (2^10..). A partition of size 0 with an
// image gets the image's (expanded) size.
#include <cstdio>
#include <map>

#include "base/atomic_file.h"
#include "base/fd_io.h"
#include "base/units.h"
#include "lp/builder.h"
#include "lp/writer.h"
#include "superimg/super_image.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/lp_tools.h"

namespace flashpipe::tools {
namespace {

using MakeFlags = LpMake;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

Result<uint32_t> Size32(const std::string& text, const char* what) {
  FP_ASSIGN_OR_RETURN(uint64_t v, ParseSize(text));
  if (v > UINT32_MAX) return InvalidArgument(fmt::format("{} {} does not fit 32 bits", what, text));
  return static_cast<uint32_t>(v);
}

// NAME:SIZE[:ALIGNMENT[:ALIGNMENT_OFFSET]]
Result<lp::BlockDeviceSpec> ParseDevice(const std::string& text) {
  auto f = Split(text, ':');
  if (f.size() < 2 || f.size() > 4) {
    return InvalidArgument(fmt::format("--device {}: expected NAME:SIZE[:ALIGNMENT[:ALIGNMENT_OFFSET]]", text));
  }
  lp::BlockDeviceSpec d{f[0], 0, lp::kDefaultAlignment, 0};
  FP_ASSIGN_OR_RETURN(d.size, ParseSize(f[1]));
  if (f.size() > 2) {
    FP_ASSIGN_OR_RETURN(d.alignment, Size32(f[2], "alignment"));
  }
  if (f.size() > 3) {
    FP_ASSIGN_OR_RETURN(d.alignment_offset, Size32(f[3], "alignment offset"));
  }
  return d;
}

Result<lp::LayoutSpec> ParseLayout(const MakeFlags& f) {
  lp::LayoutSpec spec;
  if (f.metadata_size.empty() || f.metadata_slots == 0) {
    return InvalidArgument("--metadata-size and --metadata-slots (at least 1) are required");
  }
  FP_ASSIGN_OR_RETURN(spec.metadata_max_size, Size32(f.metadata_size, "metadata size"));
  spec.metadata_slot_count = f.metadata_slots;
  FP_ASSIGN_OR_RETURN(spec.logical_block_size, Size32(f.block_size, "block size"));
  const bool implied = !f.device_size.empty() || !f.alignment.empty() || !f.alignment_offset.empty();
  if (implied == !f.devices.empty()) return InvalidArgument("give --device-size or --device, not both (nor neither)");
  if (implied) {
    if (f.device_size.empty()) return InvalidArgument("--alignment and --alignment-offset need --device-size");
    lp::BlockDeviceSpec d{f.super_name, 0, lp::kDefaultAlignment, 0};
    FP_ASSIGN_OR_RETURN(d.size, ParseSize(f.device_size));
    if (!f.alignment.empty()) {
      FP_ASSIGN_OR_RETURN(d.alignment, Size32(f.alignment, "alignment"));
    }
    if (!f.alignment_offset.empty()) {
      FP_ASSIGN_OR_RETURN(d.alignment_offset, Size32(f.alignment_offset, "alignment offset"));
    }
    spec.devices.push_back(d);
    return spec;
  }
  for (const auto& text : f.devices) {
    FP_ASSIGN_OR_RETURN(lp::BlockDeviceSpec d, ParseDevice(text));
    // The super (which holds the metadata) goes first.
    spec.devices.insert(d.name == f.super_name ? spec.devices.begin() : spec.devices.end(), d);
  }
  if (spec.devices[0].name != f.super_name) {
    return InvalidArgument(fmt::format("no --device is named {} (--super-name)", f.super_name));
  }
  return spec;
}

Result<std::map<std::string, std::string>> ParseImages(const MakeFlags& f) {
  std::map<std::string, std::string> images;
  for (const auto& text : f.images) {
    const size_t eq = text.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == text.size()) {
      return InvalidArgument(fmt::format("--image {}: expected PARTITION=FILE", text));
    }
    if (!images.emplace(text.substr(0, eq), text.substr(eq + 1)).second) {
      return InvalidArgument(fmt::format("--image: two images for partition {}", text.substr(0, eq)));
    }
  }
  return images;
}

struct GroupSpec {
  std::string name;
  uint64_t maximum_size = 0;
};

struct PartitionSpec {
  std::string name, group;
  uint32_t attributes = 0;
  uint64_t size = 0;
};

// What the flags describe, parsed (usage errors) before anything is built.
struct MakeSpec {
  lp::LayoutSpec layout;
  std::vector<GroupSpec> groups;
  std::vector<PartitionSpec> partitions;
  std::map<std::string, std::string> images;
};

Result<std::vector<GroupSpec>> ParseGroups(const MakeFlags& f) {
  std::vector<GroupSpec> out;
  for (const auto& text : f.groups) {
    auto parts = Split(text, ':');
    if (parts.size() != 2) return InvalidArgument(fmt::format("--group {}: expected NAME:MAXIMUM_SIZE", text));
    FP_ASSIGN_OR_RETURN(uint64_t max, ParseSize(parts[1]));
    out.push_back({parts[0], max});
  }
  return out;
}

// NAME:ATTRIBUTES:SIZE[:GROUP], ATTRIBUTES none or readonly.
Result<std::vector<PartitionSpec>> ParsePartitions(const MakeFlags& f) {
  if (f.partitions.empty()) return InvalidArgument("give at least one --partition");
  std::vector<PartitionSpec> out;
  for (const auto& text : f.partitions) {
    auto p = Split(text, ':');
    if (p.size() < 3 || p.size() > 4) {
      return InvalidArgument(fmt::format("--partition {}: expected NAME:ATTRIBUTES:SIZE[:GROUP]", text));
    }
    if (p[1] != "none" && p[1] != "readonly") {
      return InvalidArgument(fmt::format("--partition {}: attributes must be none or readonly", text));
    }
    FP_ASSIGN_OR_RETURN(uint64_t size, ParseSize(p[2]));
    out.push_back({p[0], p.size() == 4 ? p[3] : lp::kDefaultGroup, p[1] == "readonly" ? lp::kAttrReadonly : 0, size});
  }
  return out;
}

Result<MakeSpec> ParseMake(const MakeFlags& f) {
  MakeSpec spec;
  FP_ASSIGN_OR_RETURN(spec.layout, ParseLayout(f));
  FP_ASSIGN_OR_RETURN(spec.groups, ParseGroups(f));
  FP_ASSIGN_OR_RETURN(spec.partitions, ParsePartitions(f));
  FP_ASSIGN_OR_RETURN(spec.images, ParseImages(f));
  return spec;
}

Result<lp::Metadata> Build(const MakeFlags& f, const MakeSpec& spec) {
  FP_ASSIGN_OR_RETURN(lp::Builder b, lp::Builder::New(spec.layout));
  if (f.virtual_ab) b.SetHeaderFlags(lp::kHeaderFlagVirtualAb);
  for (const auto& g : spec.groups) FP_RETURN_IF_ERROR(b.AddGroup(g.name, g.maximum_size));
  for (const auto& p : spec.partitions) {
    uint64_t size = p.size;
    if (auto it = spec.images.find(p.name); size == 0 && it != spec.images.end()) {
      FP_ASSIGN_OR_RETURN(size, superimg::ImageSize(it->second));
    }
    FP_RETURN_IF_ERROR(b.AddPartition(p.name, p.group, p.attributes));
    FP_RETURN_IF_ERROR(b.ResizePartition(p.name, size));
  }
  return b.Export();
}

Status WriteEmpty(const lp::Metadata& m, const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, lp::SerializeEmptyImage(m));
  FP_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path));
  FP_RETURN_IF_ERROR(WriteAll(out.fd(), bytes, out.temp_path()));
  return out.Commit();
}

Status Make(const MakeFlags& f, const MakeSpec& spec) {
  FP_ASSIGN_OR_RETURN(bool regular, IsRegularOrAbsent(f.output));
  if (!regular) {
    return InvalidArgument(fmt::format("{} is not a regular file: write a super image to a device with flashpipe "
                                       "write", f.output));
  }
  FP_ASSIGN_OR_RETURN(lp::Metadata m, Build(f, spec));
  if (spec.images.empty() && !f.force_full) return WriteEmpty(m, f.output);
  std::vector<superimg::PartitionImage> list;
  for (const auto& [name, path] : spec.images) list.push_back({name, path});
  return superimg::WriteSuperImage(m, list, f.output,
                                   {.sparse = f.sparse, .block_size = spec.layout.logical_block_size});
}

}  // namespace

void LpMake::Add(CLI::App& lp) {
  app = lp.add_subcommand("make", "build liblp metadata like lpmake: a super_empty.img, or with --image a whole "
                                  "super image (raw or --sparse) streamed from the partition images");
  app->add_option("-d,--device-size", device_size, "size of the super partition");
  app->add_option("-m,--metadata-size", metadata_size, "bytes reserved for each metadata copy")->required();
  app->add_option("-s,--metadata-slots", metadata_slots, "number of metadata slots (2 for A/B)")->required();
  app->add_option("-p,--partition", partitions, "NAME:ATTRIBUTES:SIZE[:GROUP] (attributes none or readonly)");
  app->add_option("-g,--group", groups, "NAME:MAXIMUM_SIZE, a group of partitions (0: no limit)");
  app->add_option("-i,--image", images, "PARTITION=FILE, raw or sparse: makes a whole super image");
  app->add_flag("-S,--sparse", sparse, "write the super image as a sparse image");
  app->add_option("-o,--output", output, "the file to write")->required();
  app->add_option("-a,--alignment", alignment, "partition alignment in bytes (default 1M)");
  app->add_option("-O,--alignment-offset", alignment_offset, "alignment offset in bytes (default 0)");
  app->add_option("-b,--block-size", block_size, "logical block size, also the sparse block size (default 4096)");
  app->add_option("-D,--device", devices, "NAME:SIZE[:ALIGNMENT[:ALIGNMENT_OFFSET]], instead of --device-size");
  app->add_option("-n,--super-name", super_name, "name of the block device holding the metadata (default super)");
  app->add_flag("-F,--force-full-image", force_full, "a whole super image even without --image");
  app->add_flag("--virtual-ab", virtual_ab, "set the header's VIRTUAL_AB_DEVICE flag (version 10.2 header)");
}

int LpMake::Run(CLI::App& lp) {
  auto spec = ParseMake(*this);
  if (!spec.ok()) return UsageError(lp, spec.status());
  return ExitWith("lp make", Make(*this, *spec));
}

}  // namespace flashpipe::tools
