// --progress MODE for the commands that show phases (write, read):
//   auto   a bar on a terminal, plain lines otherwise; nothing when the --json
//          report goes to stdout (the default)
//   bar, lines, none
//   json   NDJSON events on stdout (docs/schema/progress-events.schema.json),
//          ending with the report; human text stays on stderr
// --no-progress is the older spelling of --progress none.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/status.h"
#include "input/progress.h"

namespace flashpipe::tools {

void AddProgressFlags(CLI::App& app, std::string& mode, bool& no_progress);
// `json`: the --json path ("" none, "-" stdout); --progress json with the
// report on stdout is a usage error (both would go there).
Result<input::ProgressMode> ParseProgressFlags(const std::string& mode, bool no_progress, const std::string& json);

}  // namespace flashpipe::tools
