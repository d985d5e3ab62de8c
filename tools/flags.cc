#include "tools/flags.h"

#include <cstdio>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/fd_io.h"
#include "base/file_id.h"
#include "base/units.h"
#include "io/image_writer.h"
#include "tools/describe.h"

namespace flashpipe::tools {

std::string CommandName(const char* argv0) {
  std::string_view self = argv0;
  if (auto slash = self.rfind('/'); slash != std::string_view::npos) self.remove_prefix(slash + 1);
  return fmt::format("flashpipe {}", self);
}

namespace {

// CLI11 shows a flag's default value in its name ("--json{-}"): drop it.
class Formatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    for (size_t open; (open = name.find('{')) != std::string::npos;) {
      size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
};

void PrintUsageError(CLI::App& app, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n(run '%s --help' for the usage)\n", app.get_name().c_str(), message.c_str(),
               app.get_name().c_str());
}

// The formatter and the exit status after the command's own footer, on the
// app and every subcommand below it (which took their parent's when they
// were added, before this ran).
void Decorate(CLI::App& app, const std::shared_ptr<Formatter>& formatter, bool interruptible) {
  app.formatter(formatter);
  std::string exit_status = interruptible
      ? "Exit status: 0 done, 1 failed, 2 usage error, 130 interrupted by SIGINT (143 by SIGTERM, 129 by SIGHUP): stopped\n"
        "cleanly,"
        " the state of each target said on stderr and in the report."
      : "Exit status: 0 done, 1 failed, 2 usage error.";
  std::string own = app.get_footer();
  app.footer(own.empty() ? exit_status : own + "\n\n" + exit_status);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) Decorate(*sub, formatter, interruptible);
}

}  // namespace

std::optional<int> ParseOrExit(CLI::App& app, int argc, char** argv, bool interruptible) {
  Decorate(app, std::make_shared<Formatter>(), interruptible);
  if (argc == 2 && argv[1] == kHelpJsonFlag) {  // for gen_docs.py (tools/describe.h)
    std::fputs(DescribeAppJson(app).c_str(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitFailed;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    PrintUsageError(app, e.what());
    return kExitUsage;
  }
  return std::nullopt;
}

int UsageError(CLI::App& app, const Status& status) {
  PrintUsageError(app, status.ToString());
  return kExitUsage;
}

void AddWriterFlags(CLI::App& app, WriterFlags& f, unsigned default_depth) {
  app.add_option("--backend", f.backend, "I/O backend: auto, io_uring, threads or sync (default auto)");
  app.add_option("--io-backend", f.backend, "same as --backend")->group("");
  app.add_option("-Q,--queue-depth", f.queue_depth,
                 fmt::format("requests in flight per device, 1..256 (default {})", default_depth))
      ->check(CLI::Range(1u, 256u));
  app.add_option("--request-size", f.request_size,
                 "bytes per device request, a multiple of 4K from 4K to 64M, K/M suffixes (default: from the device)");
}

Result<WriterSettings> ParseWriterFlags(const WriterFlags& f) {
  WriterSettings s;
  FP_ASSIGN_OR_RETURN(s.backend, io::ParseBackend(f.backend));
  s.queue_depth = f.queue_depth;
  if (!f.request_size.empty()) {
    FP_ASSIGN_OR_RETURN(s.request_size, ParseSize(f.request_size));
    FP_RETURN_IF_ERROR(io::CheckRequestSize(s.request_size));
  }
  return s;
}

void AddJsonFlag(CLI::App& app, std::string& path, const std::string& what) {
  app.add_flag("--json{-}", path, what + " as JSON, to FILE with --json=FILE, else to stdout")
      ->option_text("[=FILE]");
}

Status CheckJsonFile(const std::string& json, const std::vector<std::string>& files) {
  if (json.empty() || json == "-") return Status::Ok();
  FP_ASSIGN_OR_RETURN(std::optional<FileId> id, FileIdOfPath(json));
  std::error_code ec;
  const std::filesystem::path where = std::filesystem::weakly_canonical(json, ec);
  for (const std::string& f : files) {
    if (f.empty() || f == "-") continue;
    FP_ASSIGN_OR_RETURN(std::optional<FileId> other, FileIdOfPath(f));
    std::error_code ec2;
    const bool same = id && other ? *id == *other : !id && !other && !ec && where == std::filesystem::weakly_canonical(f, ec2);
    if (same) return InvalidArgument(fmt::format("--json={} is {}: the report would be written over it", json, f));
  }
  return Status::Ok();
}

Status WriteJson(const std::string& path, const std::string& text) { return WriteText(path, text + "\n"); }

Status WriteText(const std::string& path, const std::string& text) {
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  if (path == "-") {
    std::fflush(stdout);
    return WriteAll(STDOUT_FILENO, bytes, "stdout");
  }
  FP_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path));
  FP_RETURN_IF_ERROR(WriteAll(out.fd(), bytes, out.temp_path()));
  return out.Commit();
}

}  // namespace flashpipe::tools
