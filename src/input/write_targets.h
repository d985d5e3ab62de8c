// WriteTargets: the targets of one `flashpipe write`, every one of them
// checked before any of them is changed.
//
//   Check()         opens and checks every target, changing nothing: block
//                   devices opened (O_EXCL unless force), existing files
//                   opened read-write, a new path's directory checked. Refused:
//                   a directory, a missing /dev node, a path given twice
//                   (through a symlink or hard link, or not there yet), a disk
//                   and its partition, and a file that backs a loop device in
//                   use (mounted, held, opened exclusively) unless force.
//                   A windowed target (TARGET:PARTNAME, --offset, --size) is
//                   an existing file or device written in place inside its
//                   window, which is resolved and checked here (the GPT read,
//                   the partition found, bounds and alignment).
//   RefuseInputs()  a target that is a file the image is read from (same
//                   device and inode, whatever the path or stdin), a loop
//                   device over one, or a disk and its partition.
//   CheckFits()     the image's size (or a lower bound) against every block
//                   device and every window.
//   Prepare()       the one place targets change: a temporary file beside each
//                   file target (base/atomic_file.h), in-place files truncated,
//                   an eMMC boot area's force_ro switched off (mmc/boot_area.h;
//                   put back when WriteTargets goes, whatever happened).
//   Commit()        after the whole write (and verify): files of unknown size
//                   cut to size, temporary files renamed over their targets.
//
// Each step goes through every target and keeps each one's own failure
// (Describe()), so a report can say what happened to every target and not
// only to the first that failed; the step returns the first failure. The
// job goes on only when a step returned OK.
//
// Block devices, and existing files when in_place, are written in place: a
// failure after Prepare leaves them partly written, and in_place_names()
// says which. Every other file target keeps its old content until Commit;
// destroying WriteTargets before Commit removes the temporary files.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/file_id.h"
#include "base/status.h"
#include "input/image_source.h"
#include "input/write_report.h"
#include "io/image_writer.h"
#include "io/target.h"
#include "io/target_spec.h"
#include "mmc/boot_wp.h"

namespace flashpipe::input {

struct TargetPolicy {
  bool force = false;     // block devices in use, files behind loop devices in use
  bool in_place = false;  // existing regular files: write into them, not beside
  // --offset/--size: the window of every target, inside the GPT partition
  // a TARGET:NAME names (io/target_spec.h).
  io::WindowRequest window;
  std::string sysfs_root = "/sys";  // where eMMC boot areas' force_ro is (tests: a stand-in)
  // How a boot area's card is asked whether the area is write-protected
  // (mmc/boot_wp.h; tests: a fake card).
  mmc::OpenCardFn open_card = mmc::OpenCardForWp;
};

class WriteTargets {
 public:
  static WriteTargets Check(const std::vector<std::string>& paths, const TargetPolicy& policy);
  WriteTargets(WriteTargets&&) noexcept;
  WriteTargets& operator=(WriteTargets&&) noexcept;
  ~WriteTargets();

  // The first target's failure so far; OK when every target passed.
  Status status() const;
  Status RefuseInputs(const std::vector<InputFile>& inputs);
  // `exact`: the image's size when known; `at_least`: a lower bound.
  Status CheckFits(std::optional<uint64_t> exact, uint64_t at_least);
  // `size`: the image's size when known (files are sized to it up front).
  Status Prepare(std::optional<uint64_t> size);

  // After Prepare: one device per target, on a queue of `backend`.
  Result<std::vector<io::Device>> MakeDevices(io::Backend backend, unsigned depth);
  // Bytes every in-place target takes (the smallest window of a block device
  // or a windowed file; 0: none, files grow).
  uint64_t BlockCapacity() const;
  // The name of the first queue ("io_uring", ...), after MakeDevices.
  std::string backend_name() const;

  // Completes the targets `complete` names (all when empty): a file of
  // unknown size is cut to `image_size`, a temporary file renamed over its
  // target, a block device just counted as written. One failing target does
  // not keep the others from completing.
  Status Commit(uint64_t image_size, const std::vector<bool>& complete = {});
  // A failure the writer found on target `index` (ImageWriter::failed_device).
  void Blame(size_t index, const Status& status);

  // Targets a failure after Prepare may have left partly written.
  std::vector<std::string> in_place_names() const;
  // An in-place file was truncated by Prepare (changed before any write).
  bool truncated_in_place() const;

  // What each target is and what happened to it so far, in the order given.
  struct Info {
    std::string path;
    TargetKind kind = TargetKind::kUnknown;
    bool in_place = false;
    Status status;           // its own failure
    bool prepared = false;   // Prepare reached it: temp file made, or written in place from now on
    bool truncated = false;  // an in-place file cut by Prepare
    bool committed = false;
    std::string partition;                // TARGET:PARTNAME's name, or empty
    std::optional<io::ByteRange> window;  // a windowed target's bytes of the file or device
  };
  std::vector<Info> Describe() const;

  struct Entry;  // one target (write_targets.cc)

 private:
  WriteTargets();
  std::vector<std::unique_ptr<Entry>> entries_;
  bool prepared_ = false;
  std::string sysfs_root_;
  mmc::OpenCardFn open_card_;
};

// A file a run writes besides its targets (the --json report; "-" is
// stdout), described by `role`: refused when it lands on one of `targets`
// (there already or not) or on one of `inputs`. By stat alone, so that it
// can come first, before anything is opened.
Status RefuseOtherOutput(const std::string& path, std::string_view role, const std::vector<std::string>& targets,
                         const std::vector<InputFile>& inputs);

}  // namespace flashpipe::input
