#include "fastboot/ffs_connection.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "wire/protocol.h"
#include "wire/usb.h"

namespace flashpipe::fastboot {
namespace {

using std::chrono::milliseconds;

constexpr size_t kMaxPacket = 1024;  // bulk, SuperSpeed
constexpr milliseconds kPollStep{1000};
constexpr milliseconds kDrainWarnAfter{5000};
// A transfer is sent back to back: this long without a packet, it ended.
constexpr milliseconds kTransferQuiet{100};
// Data-phase writes queued at once: enough to keep the bus busy, few enough
// that the last of them is taken well within write_timeout.
constexpr size_t kDataWrites = 4;

uint64_t RoundUp(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }
uint64_t RoundDown(uint64_t v, uint64_t m) { return v / m * m; }
std::string ErrnoText(int64_t result) { return std::strerror(static_cast<int>(-result)); }

milliseconds Until(std::chrono::steady_clock::time_point t) {
  auto left = std::chrono::duration_cast<milliseconds>(t - std::chrono::steady_clock::now());
  return std::max(left, milliseconds(0));
}

}  // namespace

FfsConnection::FfsConnection(BulkEndpoints* endpoints, UsbOptions options)
    : ep_(endpoints), options_(options), command_buf_(kMaxPacket) {}

Status FfsConnection::Start(std::string peer) {
  peer_ = std::move(peer);
  error_ = Status::Ok();
  gone_seen_ = gone_count_.load();
  command_.reset();
  skipping_ = false;
  {
    std::lock_guard lock(mu_);
    interrupt_ = false;
  }
  auto mps = ep_->MaxPacketSize();
  if (!mps.ok()) return Cancelled(fmt::format("usb: no endpoint: {}", mps.status().ToString()));
  if (*mps > kMaxPacket || *mps < 8) return Corrupt(fmt::format("usb: wMaxPacketSize {}", *mps));
  mps_ = *mps;
  return Status::Ok();
}

void FfsConnection::HostGone() {
  gone_count_.fetch_add(1);
  ep_->Wake();
}

bool FfsConnection::InterruptIfIdle() {
  {
    std::lock_guard lock(mu_);
    if (!waiting_) return false;
    interrupt_ = true;
  }
  ep_->Wake();
  return true;
}

Status FfsConnection::CheckHost() {
  if (error_.ok() && gone_count_.load() != gone_seen_) error_ = Cancelled("usb: host gone (disabled)");
  return error_;
}

size_t FfsConnection::Queued(Kind kind) const {
  return static_cast<size_t>(std::count_if(requests_.begin(), requests_.end(), [kind](const auto& r) {
    return r.second.kind == kind && !r.second.result.has_value();
  }));
}

void FfsConnection::CancelAll(Kind kind) {
  for (const auto& [tag, r] : requests_) {
    if (r.kind == kind && !r.result.has_value()) ep_->Cancel(tag);
  }
}

Status FfsConnection::SubmitRead(Kind kind, uint8_t* buf, size_t len, uint64_t* tag) {
  *tag = next_tag_++;
  if (Status st = ep_->SubmitRead(std::span(buf, len), *tag); !st.ok()) {
    if (error_.ok()) error_ = Cancelled(fmt::format("usb: host gone ({})", st.ToString()));
    return error_;
  }
  requests_[*tag] = Request{.kind = kind, .buf = buf, .len = len};
  return Status::Ok();
}

Status FfsConnection::SubmitWrite(std::string_view bytes, uint64_t* tag) {
  *tag = next_tag_++;
  std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (Status st = ep_->SubmitWrite(data, *tag); !st.ok()) {
    if (error_.ok()) error_ = Cancelled(fmt::format("usb: host gone ({})", st.ToString()));
    return error_;
  }
  requests_[*tag] = Request{.kind = Kind::kWrite, .deadline = Clock::now() + options_.write_timeout};
  return Status::Ok();
}

Status FfsConnection::Collect(milliseconds wait) {
  for (const auto& [tag, r] : requests_) {
    if (r.kind == Kind::kWrite) wait = std::min(wait, Until(r.deadline));
  }
  std::vector<EndpointDone> done;
  FP_RETURN_IF_ERROR(ep_->Reap(&done, wait));
  for (const EndpointDone& d : done) {
    auto it = requests_.find(d.tag);
    if (it == requests_.end()) continue;
    Request& r = it->second;
    if (r.kind == Kind::kData) {
      r.result = d.result;  // taken in order by ReceiveDownload
      continue;
    }
    if (r.kind == Kind::kCommand) {
      command_tag_ = 0;
      CommandArrived(r, d.result);
    } else {
      if (d.result < 0 && error_.ok()) error_ = Cancelled(fmt::format("usb: host gone (response: {})", ErrnoText(d.result)));
    }
    requests_.erase(it);
  }
  return Status::Ok();
}

Status FfsConnection::Pump(milliseconds wait) {
  FP_RETURN_IF_ERROR(CheckHost());
  FP_RETURN_IF_ERROR(Collect(wait));
  auto now = Clock::now();
  for (const auto& [tag, r] : requests_) {
    if (r.kind == Kind::kWrite && now >= r.deadline) {
      if (error_.ok()) {
        error_ = Cancelled(fmt::format("usb: the host took no response for {} ms", options_.write_timeout.count()));
      }
      CancelAll(Kind::kWrite);  // a stale response must not reach the next host
      break;
    }
  }
  return CheckHost();
}

// One completed command read. A transfer longer than any command is
// answered once: its first packet becomes an error, the rest is dropped
// until a short packet ends it, or until no packet came for kTransferQuiet
// (a transfer of whole packets has no end on the wire).
void FfsConnection::CommandArrived(const Request& read, int64_t result) {
  bool overflow = result == -EOVERFLOW;
  if (result < 0 && !overflow) {
    if (error_.ok()) error_ = Cancelled(fmt::format("usb: host gone (command read: {})", ErrnoText(result)));
    return;
  }
  bool full = overflow || static_cast<size_t>(result) == read.len;
  if (skipping_) {
    skipping_ = full;
    skip_seen_ = Clock::now();
    return;
  }
  if (result == 0) return;  // a zero-length packet: no command
  if (full && read.len > wire::kMaxCommand) {
    command_ = InvalidArgument(fmt::format("usb: transfer of more than {} bytes is not a command", read.len));
    skipping_ = true;
    skip_seen_ = Clock::now();
    return;
  }
  command_ = std::string(reinterpret_cast<const char*>(read.buf), static_cast<size_t>(result));
}

Status FfsConnection::WaitCommand() {
  {
    std::lock_guard lock(mu_);
    waiting_ = true;
  }
  Status st;
  while (!command_.has_value()) {
    {
      std::lock_guard lock(mu_);
      if (interrupt_) break;
    }
    if (command_tag_ == 0) {
      size_t len = std::max<size_t>(mps_, wire::kMaxCommand);
      st = SubmitRead(Kind::kCommand, command_buf_.data(), std::min(len, command_buf_.size()), &command_tag_);
      if (!st.ok()) break;
    }
    if (st = Pump(skipping_ ? kTransferQuiet : kPollStep); !st.ok()) break;
    if (skipping_ && Clock::now() - skip_seen_ >= kTransferQuiet) skipping_ = false;
  }
  std::lock_guard lock(mu_);
  waiting_ = false;
  if (st.ok() && std::exchange(interrupt_, false)) {
    return Cancelled("usb: gave the device to another client");  // a command that came meanwhile is kept
  }
  return st;
}

Result<std::string> FfsConnection::ReadCommand(size_t max_size) {
  FP_RETURN_IF_ERROR(WaitCommand());
  Result<std::string> command = std::move(*command_);
  command_.reset();
  if (command.ok() && command->size() > max_size) {
    return InvalidArgument(fmt::format("command of {} bytes, max {}", command->size(), max_size));
  }
  return command;
}

Status FfsConnection::Send(std::string_view message) {
  FP_RETURN_IF_ERROR(CheckHost());
  message = message.substr(0, wire::usb::kMaxResponse);
  while (Queued(Kind::kWrite) + 2 > options_.max_writes) FP_RETURN_IF_ERROR(Pump(kPollStep));
  uint64_t tag;
  FP_RETURN_IF_ERROR(SubmitWrite(message, &tag));
  // A response that fills whole packets (64 bytes at full speed) needs a
  // zero-length packet, or the host's read goes on waiting.
  if (!message.empty() && message.size() % mps_ == 0) FP_RETURN_IF_ERROR(SubmitWrite({}, &tag));
  return Status::Ok();
}

Status FfsConnection::BeginData(uint64_t total) {
  data_left_ = total;
  data_stage_.clear();
  return Status::Ok();
}

Status FfsConnection::SendData(std::span<const uint8_t> bytes) {
  if (bytes.size() > data_left_) return Internal("usb: data phase longer than announced");
  const size_t chunk = std::max<size_t>(mps_, RoundDown(options_.read_size, mps_));
  while (!bytes.empty()) {
    size_t n = std::min(bytes.size(), chunk - data_stage_.size());
    data_stage_.append(reinterpret_cast<const char*>(bytes.data()), n);
    bytes = bytes.subspan(n);
    data_left_ -= n;
    if (data_stage_.size() < chunk && data_left_ > 0) continue;
    FP_RETURN_IF_ERROR(CheckHost());
    while (Queued(Kind::kWrite) >= kDataWrites) FP_RETURN_IF_ERROR(Pump(kPollStep));
    uint64_t tag;
    FP_RETURN_IF_ERROR(SubmitWrite(data_stage_, &tag));  // copied at submission
    data_stage_.clear();
  }
  return Status::Ok();
}

Status FfsConnection::Flush() {
  while (Queued(Kind::kWrite) > 0) FP_RETURN_IF_ERROR(Pump(kPollStep));
  return Status::Ok();
}

void FfsConnection::Drain() {
  auto start = Clock::now();
  bool warned = false;
  while (!requests_.empty()) {
    CancelAll(Kind::kCommand);
    CancelAll(Kind::kData);
    CancelAll(Kind::kWrite);
    std::vector<EndpointDone> done;
    if (!ep_->Reap(&done, kPollStep).ok()) continue;
    for (const EndpointDone& d : done) requests_.erase(d.tag);
    if (!warned && Clock::now() - start > kDrainWarnAfter) {
      log::Warn("{}: {} requests not given back yet", peer_, requests_.size());
      warned = true;
    }
  }
  data_reads_.clear();
  command_tag_ = 0;
  command_.reset();
}

Status FfsConnection::ReceiveDownload(DownloadTarget& target) {
  Status st = ReceiveWindows(target);
  if (!st.ok()) {
    // No read may stay queued into the download buffer.
    CancelAll(Kind::kData);
    for (;;) {
      while (!data_reads_.empty() && requests_[data_reads_.front()].result.has_value()) {
        requests_.erase(data_reads_.front());
        data_reads_.pop_front();
      }
      if (data_reads_.empty()) break;
      if (!Collect(kPollStep).ok()) CancelAll(Kind::kData);
    }
  }
  return st;
}

// The oldest data read's result, waiting at most data_timeout for it.
Result<int64_t> FfsConnection::WaitData(uint64_t tag) {
  auto deadline = Clock::now() + options_.data_timeout;
  while (!requests_[tag].result.has_value()) {
    if (Clock::now() >= deadline) {
      return Cancelled(fmt::format("usb: no data from the host for {} ms", options_.data_timeout.count()));
    }
    FP_RETURN_IF_ERROR(Pump(std::min(kPollStep, Until(deadline))));
  }
  int64_t result = *requests_[tag].result;
  requests_.erase(tag);
  data_reads_.pop_front();
  return result;
}

// One target window after another: reads of `chunk` bytes through its
// settled part, then one read through its end, rounded up to whole packets
// (the target has room for every byte still due).
Status FfsConnection::ReceiveWindows(DownloadTarget& target) {
  const uint64_t chunk = std::max<uint64_t>(mps_, RoundDown(options_.read_size, mps_));
  while (target.remaining() > 0) {
    std::span<uint8_t> window = target.Window();
    const uint64_t settled = RoundDown(target.settled(), mps_);
    const uint64_t end = std::min<uint64_t>(target.remaining(), RoundUp(window.size(), mps_));
    uint64_t posted = 0, consumed = 0;
    bool replan = false;  // a read came back short: the rest of the plan is off
    for (;;) {
      // Past the session's deadline no read is added; once the queued ones
      // are in, the session judges (a time limit, or the rate floor) and
      // calls again to go on from there.
      const bool late = Clock::now() >= deadline();
      while (!replan && !late && posted < end && data_reads_.size() < options_.read_depth) {
        uint64_t len = posted < settled ? std::min(chunk, settled - posted) : end - posted;
        // The download's last bytes, not whole packets: asked for alone, so
        // that no short read before it can shift a full packet into it.
        if (len % mps_ != 0 && !data_reads_.empty()) break;
        uint64_t tag;
        FP_RETURN_IF_ERROR(SubmitRead(Kind::kData, window.data() + posted, len, &tag));
        data_reads_.push_back(tag);
        posted += len;
      }
      if (data_reads_.empty()) {
        if (late) return TimedOut("deadline passed");
        break;
      }
      const Request& read = requests_[data_reads_.front()];
      uint8_t* landed = read.buf;
      const size_t asked = read.len;
      FP_ASSIGN_OR_RETURN(int64_t n, WaitData(data_reads_.front()));
      if (n == -EOVERFLOW) return InvalidArgument("usb: the host sent more data than announced");
      if (n < 0) {
        if (error_.ok()) error_ = Cancelled(fmt::format("usb: host gone mid-download ({})", ErrnoText(n)));
        return error_;
      }
      // After a short read, later reads landed above their place.
      uint8_t* place = window.data() + consumed;
      if (landed != place && n > 0) std::memmove(place, landed, static_cast<size_t>(n));
      target.Arrived(static_cast<size_t>(n));
      consumed += static_cast<uint64_t>(n);
      replan |= static_cast<size_t>(n) < asked;
    }
  }
  return Status::Ok();
}

}  // namespace flashpipe::fastboot
