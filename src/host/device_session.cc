#include "host/device_session.h"

#include <charconv>

namespace flashpipe::host {
namespace {

// `image`: "an image of N bytes", "a stream of at least N bytes".
Status TooLarge(const std::string& partition, const std::string& image, uint64_t size) {
  return NoSpace(
      fmt::format("{} does not fit {} (partition-size {} bytes); nothing more sent", image, partition, size));
}

// A device that does not say: no limit but the protocol's 32-bit size.
constexpr uint64_t kNoLimit = 0xfffff000;

}  // namespace

DeviceSession::DeviceSession(std::unique_ptr<Transport> transport, FastbootClient::InfoFn info)
    : client_(std::move(transport), std::move(info)) {}

Result<uint64_t> DeviceSession::MaxDownloadSize() {
  if (max_download_) return *max_download_;
  FP_ASSIGN_OR_RETURN(std::string v, OptionalVar("max-download-size"));
  if (v.empty()) {
    max_download_ = 0;  // the device does not say: no limit but the protocol's
  } else {
    FP_ASSIGN_OR_RETURN(max_download_, ParseDeviceSize("max-download-size", v));
  }
  return *max_download_;
}

Result<std::string> DeviceSession::CurrentSlot() {
  if (current_slot_) return *current_slot_;
  auto v = client_.GetVar("current-slot");
  if (!v.ok()) return v.status().WithContext("getvar current-slot");
  current_slot_ = *v;
  return *v;
}

Result<std::string> DeviceSession::OptionalVar(const std::string& name) {
  auto v = client_.GetVar(name);
  if (!v.ok() && !client_.refused()) return v.status();
  return v.ok() ? *v : std::string();
}

Result<int> DeviceSession::SlotCount() {
  if (slot_count_) return *slot_count_;
  FP_ASSIGN_OR_RETURN(std::string v, OptionalVar("slot-count"));
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0) n = 0;
  slot_count_ = n;
  return n;
}

uint64_t DeviceSession::PartitionSize(const std::string& partition) {
  auto v = client_.GetVar("partition-size:" + partition);
  if (!v.ok()) return 0;
  auto n = ParseDeviceSize("partition-size:" + partition, *v);
  return n.ok() ? *n : 0;  // unreadable: unknown, the device still checks
}

namespace {

// A FAIL's text with the variable's name taken out, so that two answers
// that differ only by the name they echo compare equal.
std::string Without(std::string text, std::string_view name) {
  for (size_t at; !name.empty() && (at = text.find(name)) != std::string::npos;) text.replace(at, name.size(), "*");
  return text;
}

}  // namespace

Status DeviceSession::CheckPartition(const std::string& partition) {
  const std::string size_var = "partition-size:" + partition;
  auto size = client_.GetVar(size_var);
  if (size.ok()) return Status::Ok();
  if (!client_.refused()) return size.status();
  auto type = client_.GetVar("partition-type:" + partition);
  if (type.ok()) return Status::Ok();
  if (!client_.refused()) return type.status();
  if (!unknown_var_answer_) {
    constexpr std::string_view kNoSuchVar = "flashpipe-no-such-variable";
    auto none = client_.GetVar(kNoSuchVar);
    if (!none.ok() && !client_.refused()) return none.status();
    unknown_var_answer_ = none.ok() ? std::string("OKAY") : Without(none.status().message(), kNoSuchVar);
  }
  if (Without(size.status().message(), size_var) == *unknown_var_answer_) return Status::Ok();
  return NotFound(fmt::format("the device has no partition '{}' (getvar {}: {}); nothing sent", partition, size_var,
                              size.status().message()));
}

void DeviceSession::Forget() {
  max_download_.reset();
  limit_name_ = "max-download-size";
  device_streams_.reset();
  current_slot_.reset();
  slot_count_.reset();
  unknown_var_answer_.reset();
}

Result<std::vector<std::string>> DeviceSession::Partitions(const std::string& part, const std::string& slot,
                                                           bool* has_slot) {
  FP_ASSIGN_OR_RETURN(std::string has, OptionalVar("has-slot:" + part));
  bool slotted = has == "yes";
  if (has_slot != nullptr) *has_slot = slotted;
  if (!slotted) return std::vector<std::string>{part};
  if (slot == "all") {
    std::vector<std::string> names;
    FP_ASSIGN_OR_RETURN(int count, SlotCount());
    for (int i = 0; i < count; ++i) names.push_back(part + "_" + static_cast<char>('a' + i));
    return names;
  }
  std::string s = slot;
  if (s.empty() || s == "other") {
    FP_ASSIGN_OR_RETURN(s, CurrentSlot());
    if (s.empty()) return NotFound("Failed to identify current slot");
    if (slot == "other") {
      FP_ASSIGN_OR_RETURN(int count, SlotCount());
      if (count == 0) return NotFound("No known slots");
      s = std::string(1, static_cast<char>('a' + (s[0] - 'a' + 1) % count));
    }
  }
  return std::vector<std::string>{part + "_" + s};
}

Result<bool> DeviceSession::IsLogical(const std::string& partition) {
  FP_ASSIGN_OR_RETURN(std::string v, OptionalVar("is-logical:" + partition));
  return v == "yes";
}

Status DeviceSession::Run(const std::string& command, std::string_view what, FlashObserver& observer) {
  observer.OnStep(what);
  Status st = client_.Command(command).status();
  observer.OnStepDone(st);
  return st;
}

Result<std::vector<Part>> DeviceSession::PlanAll(Cursor& cursor, const ImageShape& shape, const PartLimits& limits) {
  std::vector<Part> parts;
  Position from;
  for (bool first = true;; first = false) {
    FP_ASSIGN_OR_RETURN(auto part, PlanPart(cursor, shape, from, first, limits));
    if (!part) return parts;
    parts.push_back(*part);
    from = part->end;
  }
}

Status DeviceSession::FlashImage(const std::string& partition, Cursor& cursor, FlashObserver& observer,
                                 FlashStats* stats) {
  FP_ASSIGN_OR_RETURN(ImageShape shape, cursor.Shape());
  FP_ASSIGN_OR_RETURN(uint64_t mds, MaxDownloadSize());
  if (mds == 0 || mds > kNoLimit) mds = kNoLimit;  // a download's size is 8 hex digits
  FP_ASSIGN_OR_RETURN(bool logical, IsLogical(partition));
  if (check_partitions_ && !logical) FP_RETURN_IF_ERROR(CheckPartition(partition));
  if (logical) {
    if (shape.bytes == 0) {
      return InvalidArgument(fmt::format("{} is logical and the image's size is not known before it is read "
                                         "(a raw stream): give a file, or a compressed image that records its size",
                                         partition));
    }
    stats->started = true;  // a resize may lose what the partition held
    FP_RETURN_IF_ERROR(Run(fmt::format("resize-logical-partition:{}:{}", partition, shape.bytes),
                           fmt::format("Resizing '{}'", partition), observer));
  }
  uint64_t room = logical ? 0 : PartitionSize(partition);
  if (room != 0 && shape.bytes > room) {
    return TooLarge(partition, fmt::format("an image of {} bytes", shape.bytes), room);
  }
  PartLimits limits{.max_bytes = std::min(mds, cursor.max_part_bytes()),
                    .max_chunks = cursor.max_part_chunks(),
                    .max_bytes_from = mds <= cursor.max_part_bytes() ? limit_name_ : "the host's window",
                    .raw_when_fits = raw_when_fits_};
  std::vector<Part> planned;
  if (cursor.planned()) {
    FP_ASSIGN_OR_RETURN(planned, PlanAll(cursor, shape, limits));
    stats->parts_planned = planned.size();
  }
  // As the AOSP client words it: an image file larger than a download is
  // resparsed and sent as "sparse i/n", even as one part; one that fits,
  // and a sparse file in one part, as it is.
  bool sparse_words = planned.size() != 1 || (!shape.sparse_input && shape.bytes > mds);
  if (sparse_words && !shape.sparse_input) observer.OnResparse();
  bool stream = false;
  if (stream_flash_) {
    if (!device_streams_) {
      FP_ASSIGN_OR_RETURN(std::string v, OptionalVar("stream-flash"));
      device_streams_ = v == "yes";
    }
    stream = *device_streams_;
  }
  Position from;
  for (size_t i = 0;; ++i) {
    std::optional<Part> part;
    if (cursor.planned()) {
      if (i == planned.size()) break;
      part = planned[i];
    } else {
      FP_ASSIGN_OR_RETURN(part, PlanPart(cursor, shape, from, i == 0, limits));
      if (!part) break;
    }
    if (room != 0 && shape.bytes == 0 && part->end_block * shape.blk_sz > room) {
      return TooLarge(partition, fmt::format("a stream of at least {} bytes", part->end_block * shape.blk_sz), room);
    }
    cursor.PartStart(part->begin);
    if (stream) {
      // A name the device handles itself (serve's `gpt` table) is no
      // partition to stream to: refused, the part goes as the AOSP client sends it.
      auto r = client_.Command("stream-flash:" + partition);
      if (!r.ok() && !client_.refused()) return r.status();
      stream = r.ok();
      if (stream) stats->started = true;  // the device writes the part while it arrives
    }
    observer.OnSending(partition, i + 1, planned.size(), part->bytes, sparse_words);
    Status st = client_.Download(static_cast<uint32_t>(part->bytes), [&](DataOut& out) {
      return WritePart(*part, shape, cursor, cursor, out);
    });
    observer.OnSent(st);
    FP_RETURN_IF_ERROR(st);
    stats->bytes += part->bytes;
    observer.OnWriting(partition);
    stats->started = true;  // a download alone (or a refused one) changes nothing; a flash command may
    st = client_.Command("flash:" + partition).status();
    observer.OnWritten(st);
    FP_RETURN_IF_ERROR(st);
    ++stats->parts;
    from = part->end;
  }
  return Status::Ok();
}

}  // namespace flashpipe::host
