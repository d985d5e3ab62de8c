// DeviceSession: one device as the AOSP client 29.0.6 drives it, over a
// FastbootClient: the variables it asks for and caches (max-download-size,
// current-slot, slot-count), how a partition name becomes the names to act
// on (has-slot: PART_<slot>; --slot a|b|other|all), a logical partition
// resized to the image's size before it is flashed (is-logical, then
// resize-logical-partition), and an image sent part by part, each part
// planned for this device's max-download-size (part_plan.h) and followed
// by flash:PART. What it does is told to a FlashObserver (the AOSP-style
// lines of `flashpipe fastboot`, the progress of `flashpipe flash`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "host/fastboot_client.h"
#include "host/feed.h"

namespace flashpipe::host {

class FlashObserver {
 public:
  virtual ~FlashObserver() = default;
  // A raw image that does not fit one download is sent as sparse parts (the
  // AOSP client says so, in libsparse's words, before its first part).
  virtual void OnResparse() {}
  // Part `index` (1-based) of `count` (0: not known yet) of `bytes`;
  // `sparse`: the image is sent as sparse parts ("Sending sparse 'x' 1/1"),
  // not as it is ("Sending 'x'").
  virtual void OnSending(std::string_view /*partition*/, size_t /*index*/, size_t /*count*/, uint64_t /*bytes*/,
                         bool /*sparse*/) {}
  virtual void OnSent(const Status& /*st*/) {}
  virtual void OnWriting(std::string_view /*partition*/) {}
  virtual void OnWritten(const Status& /*st*/) {}
  // A command that prints a status line in the AOSP client ("Resizing 'x'").
  virtual void OnStep(std::string_view /*what*/) {}
  virtual void OnStepDone(const Status& /*st*/) {}
};

struct FlashStats {
  size_t parts = 0;          // parts flashed (OKAY)
  size_t parts_planned = 0;  // when known
  uint64_t bytes = 0;        // download bytes sent
  bool started = false;      // a flash (or resize) command was sent: the partition may have changed
};

class DeviceSession {
 public:
  DeviceSession(std::unique_ptr<Transport> transport, FastbootClient::InfoFn info = {});

  FastbootClient& client() { return client_; }
  std::string name() const { return client_.name(); }

  // max-download-size, asked once; 0 when the device does not say.
  Result<uint64_t> MaxDownloadSize();
  Result<std::string> CurrentSlot();
  // getvar NAME: "" when the device refuses it (FAIL, as AOSP's client
  // takes it); an error when the link fails (no answer, a broken frame), so a
  // lost reply is never read as "the device has none". Every optional
  // variable the session asks goes through it.
  Result<std::string> OptionalVar(const std::string& name);
  // slot-count; 0 when the device has no slots (or does not say).
  Result<int> SlotCount();
  // The names `part` stands for: with has-slot:PART yes, PART_<slot> (the
  // current slot when `slot` is empty, both for "all", the other one for
  // "other"), else PART (with a warning line when a slot was forced).
  // `slotted` (optional) tells whether has-slot said yes.
  Result<std::vector<std::string>> Partitions(const std::string& part, const std::string& slot,
                                              bool* slotted = nullptr);
  // -S SIZE: parts no larger than this, and max-download-size not asked.
  void set_max_download_override(uint64_t bytes) {
    max_download_ = bytes;
    limit_name_ = "-S";
  }
  // Forget cached variables (after a reboot into another fastboot).
  void Forget();
  Result<bool> IsLogical(const std::string& partition);
  // partition-size:PARTITION; 0 when the device does not say.
  uint64_t PartitionSize(const std::string& partition);
  // Before anything is sent (set_check_partitions): whether the device's own
  // answers say it has no `partition`. It FAILs partition-size:PARTITION and
  // partition-type:PARTITION, and its FAIL for partition-size differs (the
  // variable's name taken out) from its FAIL for a variable no device has:
  // it knows the variable and refused the partition. NotFound then, with
  // the device's answer; OK when it has the partition or cannot say (a
  // device that knows neither variable: as before, the flash tells).
  Status CheckPartition(const std::string& partition);
  // `flash` checks every partition before sending to it; the `fastboot`
  // verb does not (the AOSP client does not).
  void set_check_partitions(bool on) { check_partitions_ = on; }
  // A raw image that fits one download is sent as it is, zero blocks and
  // all, as the AOSP client sends it (the `fastboot` verb); off, it is sent
  // as a sparse part without its zero blocks (`flash`).
  void set_raw_when_fits(bool on) { raw_when_fits_ = on; }
  // On a device that answers getvar stream-flash "yes" (flashpipe serve),
  // each part is announced with stream-flash:PART before its download, so
  // the device writes it while it arrives (`flash`); off, the AOSP client's
  // commands only (the `fastboot` verb).
  void set_stream_flash(bool on) { stream_flash_ = on; }

  // Sends the image `cursor` reads to `partition` and flashes it. An image
  // larger than the partition-size the device reports is refused: one of a
  // known size before anything is sent, a stream before the part that would
  // cross the end (a physical partition; a logical one is resized to fit).
  // With set_check_partitions, a partition the device says it does not have
  // (CheckPartition) is refused before anything is sent.
  Status FlashImage(const std::string& partition, Cursor& cursor, FlashObserver& observer, FlashStats* stats);
  // A command with a status line: "Erasing 'x'", "Setting current slot to 'b'".
  Status Run(const std::string& command, std::string_view what, FlashObserver& observer);

 private:
  Result<std::vector<Part>> PlanAll(Cursor& cursor, const ImageShape& shape, const PartLimits& limits);

  FastbootClient client_;
  std::optional<uint64_t> max_download_;
  const char* limit_name_ = "max-download-size";  // where max_download_ came from, for errors
  std::optional<std::string> current_slot_;
  std::optional<int> slot_count_;
  bool check_partitions_ = false;
  bool raw_when_fits_ = false;
  bool stream_flash_ = false;
  std::optional<bool> device_streams_;  // getvar stream-flash, asked once
  std::optional<std::string> unknown_var_answer_;  // the FAIL for a variable no device has
};

}  // namespace flashpipe::host
