// JsonString: `s` as a JSON string literal, quoted, with '"', '\' and control
// characters escaped ("\u000a"). Well-formed UTF-8 passes through as it is;
// a byte that is not (0xff from a device's serial) becomes "\ufffd", so the
// output is always valid JSON. For the hand-built JSON of the
// commands' --json output and of `--help-json`.
#pragma once

#include <string>
#include <string_view>

namespace flashpipe {

std::string JsonString(std::string_view s);

// The members every --json report and --progress json event starts with:
// "schema": "flashpipe-NAME", "schema_version": VERSION. A program checks
// both; keys are only ever added within a version (docs/schema/).
std::string JsonSchemaMembers(std::string_view name, int version);

}  // namespace flashpipe
