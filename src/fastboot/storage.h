// Storage: the partitions a fastboot device can flash, the open targets
// behind them, and the two operations that touch them: Write (an image that
// was already validated) and Erase.
//
// Partitions come from a disk's GPT (OpenGpt; a disk without a valid one
// starts with no partitions and a warning: a blank board) or from
// NAME=PATH[:OFFSET:SIZE] specs (OpenSpecs); each distinct path is opened once (exclusively, O_DIRECT
// where possible) with one IoQueue, and each partition is a window on it.
// A `super` partition (AttachSuper) adds the logical partitions its liblp
// metadata describes (dynamic_partitions.h): they are listed and found like
// the others, and each is written through a window of its LINEAR extents.
// Every write goes through an io::WriteSink whose window is the partition:
// the pipelined engine (io::ImageWriter, the default), or a model the
// benchmark compares it with, chosen by WriteOptions.model (bounce:N, U-Boot's
// sparse writer; discard, validate only: the cost of the transfer; see
// io/write_model.h). Each bounds-checks every op against the window; Erase
// checks its ranges itself. Nothing is ever issued outside the partition,
// whatever the image says.
// The GPT of an OpenGpt storage may be replaced (ChangeTable: `flash gpt`,
// `oem format`); the partition list is then read again from the disk, and
// a super named by WatchSuper attached again. Partition pointers from Find()
// and partitions() copies are stale after it; the disk's descriptor, queue
// and geometry stay (the disk is the same).
// Thread-compatible: one Write/Erase/ChangeTable at a time.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/buffer_stock.h"
#include "base/status.h"
#include "fastboot/download_stream.h"
#include "io/image_writer.h"
#include "io/io_queue.h"
#include "io/target.h"
#include "io/write_model.h"
#include "lp/block_io.h"
#include "partition/table_change.h"
#include "mmc/boot_area.h"

namespace flashpipe::fastboot {

struct Partition {
  std::string name;
  size_t backing = 0;   // which opened path
  uint64_t offset = 0;  // absolute byte offset in that path (logical: of its first extent)
  uint64_t size = 0;
  std::array<uint8_t, 16> type_guid{};  // from the GPT; zeros for --partition
  // A logical partition of the super: its bytes are `extents` (absolute
  // ranges of the backing path, in partition order), never [offset, +size).
  // Their total is `size` unless the metadata gives it ZERO extents, which
  // store nothing: such a partition cannot be written.
  bool logical = false;
  std::vector<io::DeviceExtent> extents;
};

class DynamicPartitions;

// NAME=PATH or NAME=PATH:OFFSET:SIZE (sizes as ParseSize takes them).
inline constexpr std::string_view kPartitionSyntax = "NAME=PATH[:OFFSET:SIZE] (OFFSET, SIZE: bytes, K/M/G suffixes)";
struct PartitionSpec {
  std::string name;
  std::string path;
  uint64_t offset = 0;
  uint64_t size = 0;  // 0 with !ranged: the whole file or device
  bool ranged = false;
};
// Every error names the text and ends with kPartitionSyntax.
Result<PartitionSpec> ParsePartitionSpec(std::string_view text);

struct WriteOptions {
  io::Backend backend = io::Backend::kAuto;
  unsigned queue_depth = 0;     // 0 = the writer's default
  uint64_t request_size = 0;    // 0 = the writer's default
  io::WriteModel model;         // pipelined unless a benchmark asks otherwise
  bool force = false;           // open block devices even when in use
  // Where an eMMC boot area's force_ro is (mmc/boot_area.h): each flash or
  // erase of a boot area switches it off for the write and back after.
  std::string sysfs_root = "/sys";
};

using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// A partition opened for reading back (readback.h): a read-only view whose
// window is exactly the partition, on the descriptor the storage already
// holds (O_DIRECT where the storage has it), and the queue to read through.
struct ReadView {
  std::unique_ptr<io::Target> target;
  io::IoQueue* queue = nullptr;
  uint64_t request_size = 0;  // 0: the reader's default
  bool skip_holes = false;    // a regular file: holes are not read (they are zeros)
};

class Storage {
 public:
  static Result<std::unique_ptr<Storage>> OpenGpt(const std::string& path, const WriteOptions& options,
                                                  std::vector<std::string>* warnings);
  static Result<std::unique_ptr<Storage>> OpenSpecs(const std::vector<PartitionSpec>& specs,
                                                    const WriteOptions& options);
  // One more partition, NAME, that is all of the device or file at PATH
  // (opened like a spec's): serve --mmc adds the eMMC boot areas so.
  Status AddWholeDevice(const std::string& name, const std::string& path);
  // Tests and fuzzers: partitions over a queue the caller owns (no probing).
  static std::unique_ptr<Storage> ForQueue(io::IoQueue* queue, io::Geometry geometry,
                                           std::vector<Partition> partitions, WriteOptions options = {});
  ~Storage();

  // The physical partitions, then the logical ones.
  std::vector<Partition> partitions() const;
  const Partition* Find(std::string_view name) const;

  // Serves the logical partitions of the physical partition `name`, reading
  // its metadata for `slot` (the super's own descriptor: OpenSuperIo; tests
  // pass `io`). Fails when there is no such partition or it cannot be read.
  Status AttachSuper(const std::string& name, char slot, std::unique_ptr<lp::BlockIo> io = nullptr);
  // The physical partition AttachSuper should serve after a table change
  // (serve --super), whether or not the table has it now.
  void WatchSuper(std::string name) { super_name_ = std::move(name); }

  // True for an OpenGpt storage: its partitions are the disk's table.
  bool has_table() const { return table_disk_; }
  // Replaces the disk's table with the one `source` gives (a layout text or
  // a GPT image; partition/table_change.h: every check before the first
  // write, a refusal writes nothing), then ReloadTable(slot). Unsupported
  // when !has_table(). REQUIRES: no write in flight (the caller drains
  // write-behind flashes first); Partition pointers are stale after it.
  // `approve` sees the old and new tables before the first write and may refuse.
  Result<partition::PartitionOutcome> ChangeTable(std::span<const uint8_t> source, std::string_view source_name,
                                                  char slot, std::vector<std::string>* warnings,
                                                  const partition::ApproveFn& approve = nullptr);
  // Reads the disk's GPT again and replaces the physical partitions with
  // it (none when there is no valid table, with a warning), dropping the
  // logical ones and attaching the watched super again for `slot` when the
  // table has it (a super that cannot be read: a warning, no logical ones).
  Status ReloadTable(char slot, std::vector<std::string>* warnings);
  // After a flash of `p` (synced): when `p` is a whole block device of
  // --partition (offset 0, its whole size) and what is on it now reads as a
  // GPT, the kernel is told its partitions (partition/kernel_table.h), as
  // after `flash gpt`; nullopt when `p` is not such a partition or holds no
  // valid GPT (nothing done). There is no partition list to reload: a
  // --partition storage serves the named files and ranges.
  Result<std::optional<partition::KernelUpdate>> TellKernelAfterWholeDiskFlash(const Partition& p);
  // The super and its logical partitions; nullptr without AttachSuper.
  DynamicPartitions* dynamic() { return dynamic_.get(); }
  const DynamicPartitions* dynamic() const { return dynamic_.get(); }
  // `p` is the physical partition holding the logical partitions' metadata.
  bool IsSuper(const Partition& p) const;
  const io::Geometry& geometry(const Partition& p) const;
  // libblkid's TYPE for the partition's range ("ext4", "vfat", ...) or "raw".
  std::string ProbeType(const Partition& p) const;
  // The file or device the partition lives in ("" for ForQueue).
  const std::string& path(const Partition& p) const;

  // Writes the image made of `pieces` in order (sparse when is_sparse, else
  // raw bytes from offset 0). The pieces stay valid until Write returns, and
  // the writer reads aligned stretches straight from them.
  // REQUIRES: the image was validated and fits the partition.
  // sync=false leaves the fdatasync to a later Sync() (write-behind).
  Status Write(const Partition& p, std::span<const std::span<const uint8_t>> pieces, bool is_sparse,
               const ProgressFn& progress, bool sync = true);
  // Writes the image `stream` delivers while it arrives (stream-flash), as
  // Write does, its pieces taken from the buffer as they settle. The image
  // is checked as it goes: a raw image larger than the partition, or a
  // sparse one whose header says so, is refused before anything is written;
  // a malformed chunk or a download that ends early stops the write there,
  // after what came before was written (the error says how far). Returns
  // once every write it issued has completed.
  Status WriteStream(const Partition& p, DownloadStream& stream, bool sync);
  // fdatasync of the device or file behind the partition.
  Status Sync(const Partition& p);
  // REQUIRES: no write in flight (the view shares the storage's queue).
  Result<ReadView> OpenRead(const Partition& p) const;
  // Makes the partition read back as zeros: zeroout (block devices) or holes
  // (files), real zeros when neither works; a logical partition extent by
  // extent. Erasing the super reads its metadata again (it is gone).
  Status Erase(const Partition& p);
  // A small in-place change that must not tear: reads the logical block(s)
  // holding [offset, offset + length) of the partition, lets `edit` change
  // those bytes, writes the block(s) back in one O_DIRECT write and syncs.
  // Fails, writing nothing, when the range or its blocks leave the partition
  // or `edit` fails. (The misc partition's boot control block, misc_slot.h.)
  Status UpdateInPlace(const Partition& p, uint64_t offset, uint64_t length,
                       const std::function<Status(std::span<uint8_t>)>& edit);
  // Reads out.size() bytes at `offset` of the partition (through the same
  // whole blocks), failing when they leave it.
  Status Read(const Partition& p, uint64_t offset, std::span<uint8_t> out);

 private:
  struct Backing;
  struct BlockWindow {
    uint64_t start, end;  // device offsets, whole logical blocks
    uint64_t skip;        // from start to the first byte asked for
  };
  Result<BlockWindow> Blocks(const Partition& p, uint64_t offset, uint64_t length) const;
  Result<AlignedBuffer> ReadBlocks(const Partition& p, const BlockWindow& w);
  Storage();
  Status AddPartition(Partition p);
  // The GPT of backings_[0] as partitions_ (all or nothing).
  Status LoadGpt(std::vector<std::string>* warnings);
  static io::Device DeviceOf(const Backing& b, const Partition& p);
  Status EraseRanges(const Backing& b, const Partition& p);
  Result<size_t> OpenBacking(const std::string& what, const std::string& path);
  Result<mmc::ForceRoGuard> BootAreaWritable(const Partition& p) const;
  std::vector<std::unique_ptr<Backing>> backings_;
  std::vector<Partition> partitions_;
  std::unique_ptr<DynamicPartitions> dynamic_;
  bool table_disk_ = false;  // OpenGpt
  std::string super_name_;   // WatchSuper
  WriteOptions options_;
  BufferStock stock_{64u << 20};  // writer buffers, kept from one flash to the next
};

}  // namespace flashpipe::fastboot
