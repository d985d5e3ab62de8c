// BenchTarget: what `flashpipe bench` measures -- a block device, a regular
// file, or a simulated device ("sim:..."), with the clock to time it by and
// the queues to drive it.
//
// Safety (write tests and the sparse study are destructive):
//   - A block device holding a partition table or a filesystem (libblkid
//     probe) is refused unless `force`; so is one that is mounted or held
//     open exclusively (O_EXCL), always.
//   - A path that does not exist becomes a regular file that the benchmark
//     creates at the size it needs and removes when done (the destructor).
//   - An existing regular file may hold someone's data: refused unless
//     `force`; with it, the file is used like a device (its middle area is
//     overwritten) and neither resized nor removed.
//   - Read-only runs touch nothing and need no `force`.
// The area tested is chosen by ChooseArea and printed by the caller first.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"
#include "bench/clock.h"
#include "bench/sim_queue.h"
#include "io/io_queue.h"
#include "io/target.h"

namespace flashpipe::bench {

struct BenchTargetOptions {
  bool force = false;
  bool destructive = true;      // writes will happen
  bool buffered_reads = false;  // reads through the page cache (--buffered)
  io::Backend backend = io::Backend::kAuto;
  uint64_t new_file_size = 0;   // size to create a missing regular file with
};

// mmc_test's choice: the area starts at a quarter of the capacity, rounded
// down to 0x10000 sectors (32 MiB), or to 1 MiB on devices under 128 MiB
// (so at 0 under 4 MiB); it is `want` bytes long, at most half the capacity,
// a multiple of `align`. Created files are measured from offset 0
// (from_start). When that area is shorter than `need` (the largest request),
// a tiny device, it starts at offset 0 and may cover the whole capacity.
struct Area {
  uint64_t offset = 0;
  uint64_t size = 0;
};
Area ChooseArea(uint64_t capacity, uint64_t want, uint64_t align, bool from_start, uint64_t need = 0);

// libblkid: "" when no filesystem or partition table is found on `path`,
// else what was found ("ext4 filesystem", "gpt partition table").
Result<std::string> ProbeSignature(const std::string& path);

class BenchTarget {
 public:
  static Result<std::unique_ptr<BenchTarget>> Open(const std::string& text,
                                                   const BenchTargetOptions& options);
  ~BenchTarget();  // removes the file it created, if it created one

  const std::string& name() const { return name_; }
  const io::Geometry& geometry() const { return geometry_; }
  bool is_sim() const { return sim_.has_value(); }
  bool created_file() const { return created_; }
  const SimSpec* sim() const { return sim_ ? &*sim_ : nullptr; }
  // "block device, 512 MiB, logical block 512, O_DIRECT" and the like.
  std::string Describe() const;
  Clock& clock() { return *clock_; }

  // A queue of `depth` on this target; reads go through the buffered fd with
  // `buffered` (only with options.buffered_reads).
  Result<std::unique_ptr<io::IoQueue>> MakeQueue(unsigned depth, bool buffered = false);
  // The backend's name, as a queue reports it ("io_uring", "sim", ...).
  const std::string& backend_name() const { return backend_name_; }
  // Buffered reads: evict [offset, offset+length) from the page cache.
  void DropCache(uint64_t offset, uint64_t length);
  // The read-ahead that applies to buffered reads: "read-ahead 128 KiB
  // (BLKRAGET 256 sectors, queue/read_ahead_kb 128)".
  std::string ReadAheadInfo() const;
  // The io::Target (nullptr for a sim).
  const io::Target* target() const { return target_.get(); }

 private:
  BenchTarget() = default;
  Status OpenReal(const BenchTargetOptions& options);

  std::string name_;
  io::Geometry geometry_;
  std::optional<SimSpec> sim_;
  std::unique_ptr<Clock> clock_;
  std::unique_ptr<io::Target> target_;
  std::unique_ptr<io::Target> buffered_;  // O_RDONLY without O_DIRECT
  io::Backend backend_ = io::Backend::kAuto;
  std::string backend_name_;
  bool created_ = false;
};

}  // namespace flashpipe::bench
