// `flashpipe lp`: Android dynamic partitions (super) tools, like AOSP's
// lpdump, lpmake and lpunpack: one CLI11 app with a subcommand each
// (cmd_lp.cc), so --help, --help-json and the man pages cover them. Each
// subcommand keeps its flags in a struct: Add() declares them under the
// `lp` app, Run() does the work once parsing picked it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "lp/metadata.h"

namespace flashpipe::tools {

struct LpDump {
  std::string path, json_path;
  uint32_t slot = 0;
  CLI::App* app = nullptr;
  void Add(CLI::App& lp);
  int Run();
};

struct LpMake {
  std::string device_size, metadata_size, alignment, alignment_offset, block_size = "4096";
  uint32_t metadata_slots = 0;
  std::string super_name = "super", output;
  std::vector<std::string> devices, groups, partitions, images;
  bool sparse = false, force_full = false, virtual_ab = false;
  CLI::App* app = nullptr;
  void Add(CLI::App& lp);
  // `lp` prints usage errors (exit 2).
  int Run(CLI::App& lp);
};

struct LpUnpack {
  std::string path, dir = ".";
  std::vector<std::string> partitions;
  uint32_t slot = 0;
  CLI::App* app = nullptr;
  void Add(CLI::App& lp);
  int Run();
};

// The metadata as lpdump prints it, and as JSON members (no braces).
std::string LpText(const lp::Metadata& m);
std::string LpJson(const lp::Metadata& m);

}  // namespace flashpipe::tools
