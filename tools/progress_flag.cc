#include "tools/progress_flag.h"

#include <unistd.h>

namespace flashpipe::tools {

void AddProgressFlags(CLI::App& app, std::string& mode, bool& no_progress) {
  app.add_option("--progress", mode,
                 "auto (a bar on a terminal, else lines), bar, lines, none, or json: one JSON event per line on "
                 "stdout, ending with the report")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none", "json"}));
  app.add_flag("--no-progress", no_progress, "same as --progress none");
}

Result<input::ProgressMode> ParseProgressFlags(const std::string& mode, bool no_progress, const std::string& json) {
  using input::ProgressMode;
  if (no_progress && mode != "auto" && mode != "none") {
    return InvalidArgument(fmt::format("--no-progress and --progress {} exclude each other", mode));
  }
  if (mode == "json" && json == "-") {
    return InvalidArgument("--progress json and --json both write to stdout: use --json=FILE (the events end with the report)");
  }
  if (no_progress || mode == "none") return ProgressMode::kOff;
  if (mode == "bar") return ProgressMode::kBar;
  if (mode == "lines") return ProgressMode::kLines;
  if (mode == "json") return ProgressMode::kJson;
  if (json == "-") return ProgressMode::kOff;
  return ::isatty(STDERR_FILENO) ? ProgressMode::kBar : ProgressMode::kLines;
}

}  // namespace flashpipe::tools
