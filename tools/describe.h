// The command line as data, for the generated man pages and shell completion
// (scripts/gen_docs.py), so they are made from the same CLI11 definitions as
// `--help` and cannot drift from it:
//
//   flashpipe --help-json        the command table: name, one-line help
//   flashpipe CMD --help-json    CMD's options and positionals, subcommands
//                                (for a command built of CLI11 subcommands)
//
// Hidden options (CLI11 group "") are left out, as `--help` leaves them out.
// The output is one JSON object; its keys are described in gen_docs.py.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace flashpipe::tools {

inline constexpr std::string_view kHelpJsonFlag = "--help-json";

struct CommandSummary {
  std::string name;
  std::string help;
};

// The program: its version, the commands and the exit-status line.
std::string DescribeProgramJson(const std::vector<CommandSummary>& commands, std::string_view summary,
                                std::string_view footer);
// One command as ParseOrExit would parse it (its formatter already set).
// `full_name` is the name used in the usage line, "flashpipe lp info" for a
// subcommand (default: the app's name).
std::string DescribeAppJson(const CLI::App& app, const std::string& full_name = "");

}  // namespace flashpipe::tools
