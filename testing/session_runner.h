// RunSession / RunOne: drive a FastbootDevice through one Session over a
// ScriptedConnection, for the daemon's session-level tests (header-only).
//   RunSession  runs the script to its end; the session must end cleanly;
//               returns the final (non-INFO) responses.
//   RunOne      one command in a session of its own: its final response as
//               sent. With `whole_fail`, a FAIL whose reason was too long
//               for it comes back whole: the daemon sends the reason first
//               as INFO lines broken between words (fastboot/reason_text.h),
//               which are joined again.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fastboot/device.h"
#include "fastboot/session.h"
#include "testing/fastboot_fakes.h"

namespace flashpipe::testing {

inline std::vector<std::string> RunSession(fastboot::FastbootDevice* device, ScriptedConnection& t) {
  Status st = fastboot::Session(device, &t).Run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  return t.Finals();
}

inline std::string RunOne(fastboot::FastbootDevice* device, const std::string& command, bool whole_fail = false) {
  ScriptedConnection t;
  t.Command(command);
  auto finals = RunSession(device, t);
  if (finals.empty()) return "";
  if (!whole_fail) return finals.back();
  std::string said;
  for (const auto& line : t.Infos()) said += (said.empty() ? "" : " ") + line;
  return finals.back().starts_with("FAIL") && !said.empty() ? "FAIL" + said : finals.back();
}

}  // namespace flashpipe::testing
