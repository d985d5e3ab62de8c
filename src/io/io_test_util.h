// Helpers for the io tests: a temp dir removed afterwards, whole-file reads,
// random bytes, and an in-memory model of what an image should leave behind.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace flashpipe::io::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fp_io_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::vector<uint8_t> ReadAll(const std::string& path) {
  std::vector<uint8_t> out;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return out;
  uint8_t buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  close(fd);
  return out;
}

inline void WriteAll(const std::string& path, const std::vector<uint8_t>& data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (size_t done = 0; done < data.size();) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
}

inline std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = rng();
    for (size_t k = 0; k < 8 && i + k < n; ++k) v[i + k] = static_cast<uint8_t>(r >> (8 * k));
  }
  return v;
}

// One sink event, kept so the same sequence can be replayed on a model.
struct Event {
  enum Kind { kRaw, kFill, kSkip } kind = kRaw;
  uint64_t offset = 0, length = 0;
  uint32_t pattern = 0;
  std::vector<uint8_t> data;  // kRaw
};

// What the image leaves on a medium that held `model` before.
inline void ApplyToModel(const Event& e, std::vector<uint8_t>& model) {
  if (model.size() < e.offset + e.length) model.resize(e.offset + e.length);
  if (e.kind == Event::kRaw) std::copy(e.data.begin(), e.data.end(), model.begin() + e.offset);
  if (e.kind == Event::kFill)
    for (uint64_t i = 0; i < e.length; ++i) model[e.offset + i] = static_cast<uint8_t>(e.pattern >> (8 * (i % 4)));
}

// A random part covering [0, blocks*blk): runs of RAW, FILL (zero or not,
// some long enough to become zeroout/pattern requests) and DONT_CARE.
inline std::vector<Event> RandomPart(std::mt19937_64& rng, uint32_t blk, uint64_t blocks) {
  std::vector<Event> out;
  uint64_t at = 0, end = blocks * blk;
  while (at < end) {
    uint64_t left = (end - at) / blk;
    uint64_t n = 1 + rng() % std::min<uint64_t>(left, rng() % 4 == 0 ? 400 : 24);
    Event e;
    e.offset = at;
    e.length = n * blk;
    switch (rng() % 5) {
      case 0: case 1:
        e.kind = Event::kRaw;
        e.data = RandomBytes(rng, e.length);
        break;
      case 2:
        e.kind = Event::kFill;
        e.pattern = 0;
        break;
      case 3:
        e.kind = Event::kFill;
        e.pattern = static_cast<uint32_t>(rng()) | 1;
        break;
      default:
        e.kind = Event::kSkip;
    }
    out.push_back(std::move(e));
    at += n * blk;
  }
  return out;
}

}  // namespace flashpipe::io::test
