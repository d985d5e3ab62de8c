// StdinPipe: for one test, stdin is the read end of a pipe that a thread
// fills with `bytes` (then closes), as `cat image | flashpipe write - T`
// would; the old stdin comes back when the object goes away. Paths that are
// fifos are refused as images (OpenImage), so a stream reaches the code
// under test this way. SIGPIPE is ignored: a reader that stops early makes
// the writer's write fail, not the test die. Header-only.
// REQUIRES: one StdinPipe at a time; nothing else reads stdin meanwhile.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace flashpipe::testing {

class StdinPipe {
 public:
  explicit StdinPipe(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {
    ::signal(SIGPIPE, SIG_IGN);
    int p[2];
    if (::pipe(p) != 0) return;
    saved_ = ::dup(STDIN_FILENO);
    ::dup2(p[0], STDIN_FILENO);
    ::close(p[0]);
    int w = p[1];
    writer_ = std::thread([this, w] {
      for (size_t done = 0; done < bytes_.size();) {
        ssize_t n = ::write(w, bytes_.data() + done, bytes_.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(w);
    });
  }
  ~StdinPipe() {
    if (saved_ >= 0) {
      ::dup2(saved_, STDIN_FILENO);  // closes the read end: a blocked writer fails
      ::close(saved_);
    }
    if (writer_.joinable()) writer_.join();
  }
  StdinPipe(const StdinPipe&) = delete;
  StdinPipe& operator=(const StdinPipe&) = delete;

 private:
  std::vector<uint8_t> bytes_;
  int saved_ = -1;
  std::thread writer_;
};

}  // namespace flashpipe::testing
