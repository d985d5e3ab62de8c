#include "tools/describe.h"

#include <fmt/format.h>

#include "base/json.h"

namespace flashpipe::tools {
namespace {

std::string Trim(std::string s) {
  const char* space = " \t\n";
  s.erase(0, s.find_first_not_of(space));
  s.erase(s.find_last_not_of(space) + 1);
  return s;
}

std::string JsonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += (out.size() > 1 ? ", " : "") + JsonString(s);
  return out + "]";
}

// "none" (a flag), "optional" (--json[=FILE]) or "required" (--bmap FILE).
std::string_view ValueKind(const CLI::Option& opt) {
  if (opt.get_option_text().starts_with("[=")) return "optional";
  return opt.get_expected_max() == 0 ? "none" : "required";
}

// What the value is called: the option text without "[=...]", else CLI11's
// type name without its validators ("UINT:UINT in [1 - 256]" -> "UINT").
std::string ValueName(const CLI::Option& opt) {
  std::string text = opt.get_option_text();
  if (text.starts_with("[=") && text.ends_with("]")) return text.substr(2, text.size() - 3);
  if (!text.empty()) return text;
  if (opt.get_expected_max() == 0) return "";
  std::string type = opt.get_type_name();
  return type.substr(0, type.find(':'));
}

std::string OptionJson(const CLI::Option& opt) {
  std::vector<std::string> names;
  for (const auto& s : opt.get_snames()) names.push_back("-" + s);
  for (const auto& l : opt.get_lnames()) names.push_back("--" + l);
  return fmt::format(
      "{{\"names\": {}, \"value\": \"{}\", \"value_name\": {}, \"description\": {}, \"required\": {}, "
      "\"repeatable\": {}}}",
      JsonList(names), ValueKind(opt), JsonString(ValueName(opt)), JsonString(opt.get_description()),
      opt.get_required(), opt.get_expected_max() > 1);
}

std::string PositionalJson(const CLI::Option& opt) {
  return fmt::format("{{\"name\": {}, \"value_name\": {}, \"description\": {}, \"required\": {}, \"repeatable\": {}}}",
                     JsonString(opt.get_name()), JsonString(ValueName(opt)), JsonString(opt.get_description()),
                     opt.get_required(), opt.get_expected_max() > 1);
}

std::string Usage(const CLI::App& app, const std::string& name) {
  auto formatter = std::dynamic_pointer_cast<CLI::Formatter>(app.get_formatter());
  if (!formatter) return name;
  std::string usage = Trim(formatter->make_usage(&app, name));
  if (usage.starts_with("Usage:")) usage = Trim(usage.substr(6));
  return usage;
}

}  // namespace

std::string DescribeProgramJson(const std::vector<CommandSummary>& commands, std::string_view summary,
                                std::string_view footer) {
  std::string list;
  for (const auto& c : commands) {
    list += fmt::format("{}\n  {{\"name\": {}, \"help\": {}}}", list.empty() ? "" : ",", JsonString(c.name),
                        JsonString(c.help));
  }
  return fmt::format("{{\"name\": \"flashpipe\", \"version\": {}, \"summary\": {}, \"footer\": {},\n \"commands\": [{}\n ]}}\n",
                     JsonString(FLASHPIPE_VERSION), JsonString(summary), JsonString(footer), list);
}

std::string DescribeAppJson(const CLI::App& app, const std::string& full_name) {
  const std::string name = full_name.empty() ? app.get_name() : full_name;
  std::string options, positionals, subcommands;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;  // hidden, as in --help
    std::string& list = opt->nonpositional() ? options : positionals;
    list += fmt::format("{}\n  {}", list.empty() ? "" : ",",
                        opt->nonpositional() ? OptionJson(*opt) : PositionalJson(*opt));
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    subcommands += fmt::format("{}\n{}", subcommands.empty() ? "" : ",", DescribeAppJson(*sub, name + " " + sub->get_name()));
  }
  return fmt::format(
      "{{\"name\": {}, \"description\": {}, \"usage\": {}, \"footer\": {},\n \"options\": [{}\n ],\n"
      " \"positionals\": [{}\n ],\n \"subcommands\": [{}]}}",
      JsonString(name), JsonString(app.get_description()), JsonString(Usage(app, name)),
      JsonString(Trim(app.get_footer())), options, positionals, subcommands);
}

}  // namespace flashpipe::tools
