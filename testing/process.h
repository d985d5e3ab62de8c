// ProcessGone: whether a process has ended (gone, or a zombie: an orphan
// waits for a reaper that a container's init may not be), waiting up to a
// second for it. Header-only, like every helper in testing/.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace flashpipe::testing {

inline bool ProcessGone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    size_t paren = text.rfind(')');
    if (paren == std::string::npos || text.compare(paren + 2, 1, "Z") == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The pid a shell wrote to `path` ("echo $! > path"); -1 when none.
inline pid_t PidFromFile(const std::string& path) {
  std::ifstream in(path);
  long pid = -1;
  in >> pid;
  return static_cast<pid_t>(pid);
}

}  // namespace flashpipe::testing
