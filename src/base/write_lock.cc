#include "base/write_lock.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/log.h"

namespace flashpipe {
namespace {

// The command line of `pid`, arguments joined by spaces, at most 80 bytes.
std::string CommandLine(long pid) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) c = c == '\0' ? ' ' : c;
  return log::Printable(text, 80);
}

}  // namespace

std::string LockHolder(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return "";
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (device in hex)
    std::istringstream in(line);
    std::string index, type, mode, access, id;
    long pid = 0;
    if (!(in >> index >> type)) continue;
    if (type == "->") continue;  // a waiter, not a holder
    if (!(in >> mode >> access >> pid >> id) || type != "FLOCK") continue;
    unsigned major = 0, minor = 0;
    unsigned long long ino = 0;
    if (std::sscanf(id.c_str(), "%x:%x:%llu", &major, &minor, &ino) != 3) continue;
    if (major != ::major(st.st_dev) || minor != ::minor(st.st_dev) || ino != st.st_ino) continue;
    if (pid == ::getpid()) continue;
    std::string cmd = CommandLine(pid);
    return cmd.empty() ? fmt::format("PID {}", pid) : fmt::format("PID {} ({})", pid, cmd);
  }
  return "";
}

Status LockForWriting(int fd, const std::string& path, std::chrono::milliseconds patience) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("cannot stat {}", path));
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) return Status::Ok();
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return ErrnoError(fmt::format("cannot lock {} for writing", path));
    if (std::chrono::steady_clock::now() >= give_up) {
      std::string holder = LockHolder(fd);
      return Busy(fmt::format("{}: another writer has it open ({}); refusing to write it at the same time", path,
                              holder.empty() ? "a lock is held on it" : "held by " + holder));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Ok();
}

}  // namespace flashpipe
