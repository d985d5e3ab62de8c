#include "host/usb_queue.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

#include "base/fd_io.h"
#include "base/log.h"

namespace flashpipe::host {
namespace {

// After a failure, how long cancelled transfers may take to come back.
constexpr std::chrono::milliseconds kCancelGrace{10000};
constexpr size_t kPacketMultiple = 1024;

long Seconds(std::chrono::milliseconds d) { return static_cast<long>((d.count() + 999) / 1000); }

// Memory the kernel may still write into: never freed.
void Abandon(std::vector<uint8_t>&& buf) { (new std::vector<uint8_t>(std::move(buf)))->shrink_to_fit(); }

bool ParseSize(const std::string& text, size_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  std::string suffix(end);
  if (suffix == "K") v <<= 10;
  else if (suffix == "M") v <<= 20;
  else if (!suffix.empty()) return false;
  *out = static_cast<size_t>(v);
  return true;
}

}  // namespace

UsbQueueOptions UsbQueueFromEnv(std::chrono::milliseconds idle) {
  UsbQueueOptions o{.idle = idle};
  const char* env = std::getenv("FLASHPIPE_USB_QUEUE");
  if (env == nullptr) return o;
  std::string text(env);
  size_t colon = text.find(':');
  size_t bytes = 0, depth = 0;
  if (colon == std::string::npos || !ParseSize(text.substr(0, colon), &bytes) ||
      !ParseSize(text.substr(colon + 1), &depth) || bytes == 0 || bytes % kPacketMultiple != 0 ||
      bytes > (64u << 20) || depth == 0 || depth > 64) {
    log::Warn("FLASHPIPE_USB_QUEUE={} ignored: BYTES:DEPTH, BYTES a multiple of 1K up to 64M, DEPTH 1-64",
                          text);
    return o;
  }
  o.transfer_bytes = bytes;
  o.depth = depth;
  return o;
}

// ---- OUT ----

UsbOutQueue::UsbOutQueue(UsbHandle& handle, const UsbQueueOptions& options)
    : handle_(handle), options_(options), slots_(std::max<size_t>(options.depth, 1)) {}

UsbOutQueue::~UsbOutQueue() {
  if (in_flight() > 0) CancelAll();
}

size_t UsbOutQueue::in_flight() const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; }));
}

UsbOutQueue::Slot* UsbOutQueue::FreeSlot() {
  for (Slot& s : slots_) {
    if (!s.busy && &s != staged_) return &s;
  }
  return nullptr;
}

Result<std::span<uint8_t>> UsbOutQueue::Room() {
  FP_RETURN_IF_ERROR(failed_);
  if (staged_ == nullptr) {
    while ((staged_ = FreeSlot()) == nullptr) FP_RETURN_IF_ERROR(WaitOne());
    staged_->buf.resize(options_.transfer_bytes);
    staged_->used = 0;
  }
  return std::span(staged_->buf).subspan(staged_->used);
}

Status UsbOutQueue::Filled(size_t n) {
  staged_->used += n;
  return staged_->used == staged_->buf.size() ? SubmitStaged() : Status::Ok();
}

Status UsbOutQueue::Write(std::span<const std::span<const uint8_t>> pieces) {
  FP_RETURN_IF_ERROR(failed_);
  for (std::span<const uint8_t> p : pieces) {
    while (!p.empty()) {
      FP_ASSIGN_OR_RETURN(std::span<uint8_t> room, Room());
      size_t n = std::min(p.size(), room.size());
      std::memcpy(room.data(), p.data(), n);
      p = p.subspan(n);
      FP_RETURN_IF_ERROR(Filled(n));
    }
  }
  return Status::Ok();
}

Status UsbOutQueue::WriteFile(int file, uint64_t offset, uint64_t n) {
  while (n > 0) {
    FP_ASSIGN_OR_RETURN(std::span<uint8_t> room, Room());
    room = room.first(static_cast<size_t>(std::min<uint64_t>(room.size(), n)));
    // The image's fault, not the device's (kCorrupt), but the stream has a hole.
    if (Status st = PreadExact(file, room, offset, "the image"); !st.ok()) return Fail(st);
    offset += room.size();
    n -= room.size();
    FP_RETURN_IF_ERROR(Filled(room.size()));
  }
  return Status::Ok();
}

Status UsbOutQueue::SubmitStaged() {
  Slot* s = std::exchange(staged_, nullptr);
  if (s == nullptr || s->used == 0) return Status::Ok();  // never a zero-length packet
  for (;;) {
    auto tag = handle_.Submit(UsbDir::kOut, std::span(s->buf).first(s->used));
    if (tag.ok()) {
      s->tag = *tag;
      s->busy = true;
      return Status::Ok();
    }
    // The kernel's transfer memory is shared: wait for one of ours.
    if (tag.status().code() != Code::kBusy || in_flight() == 0) return Fail(tag.status().WithContext("usb: sending data"));
    if (Status st = WaitOne(); !st.ok()) return st;
  }
}

Status UsbOutQueue::WaitOne() {
  FP_RETURN_IF_ERROR(failed_);
  auto done = handle_.Reap(options_.idle);
  if (!done.ok()) return Fail(done.status());
  if (!done->has_value()) {
    return Fail(TimedOut(fmt::format("usb: the device took no data for {} s", Seconds(options_.idle))));
  }
  const UsbDone& d = **done;
  auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.busy && s.tag == d.tag; });
  if (it == slots_.end()) return Fail(Internal(fmt::format("usb: transfer {} came back twice or was never sent", d.tag)));
  it->busy = false;
  if (!d.status.ok()) return Fail(d.status.WithContext("usb: sending data"));
  if (d.actual != it->used) {
    return Fail(IoError(fmt::format("usb: the device took {} of {} bytes of a transfer", d.actual, it->used), 0));
  }
  return Status::Ok();
}

Status UsbOutQueue::Drain() {
  FP_RETURN_IF_ERROR(failed_);
  FP_RETURN_IF_ERROR(SubmitStaged());
  while (in_flight() > 0) FP_RETURN_IF_ERROR(WaitOne());
  return Status::Ok();
}

Status UsbOutQueue::Fail(Status st) {
  if (failed_.ok()) failed_ = st;
  staged_ = nullptr;
  CancelAll();
  return failed_;
}

// Newest first, so the bus does not start a later transfer while an earlier
// one is being cancelled; then every one is reaped.
void UsbOutQueue::CancelAll() {
  std::vector<Slot*> busy;
  for (Slot& s : slots_) {
    if (s.busy) busy.push_back(&s);
  }
  std::sort(busy.begin(), busy.end(), [](Slot* a, Slot* b) { return a->tag > b->tag; });
  for (Slot* s : busy) handle_.Cancel(s->tag);
  auto give_up = std::chrono::steady_clock::now() + kCancelGrace;
  while (in_flight() > 0 && std::chrono::steady_clock::now() < give_up) {
    auto done = handle_.Reap(std::chrono::milliseconds(100));
    if (!done.ok()) break;
    if (!done->has_value()) continue;
    for (Slot& s : slots_) {
      if (s.busy && s.tag == (*done)->tag) s.busy = false;
    }
  }
  for (Slot& s : slots_) {
    if (!s.busy) continue;
    log::Warn("usb: transfer {} never came back after its cancel; its buffer is left allocated", s.tag);
    Abandon(std::move(s.buf));
    s.busy = false;
  }
}

// ---- IN ----

namespace {

struct Request {
  uint64_t tag;
  size_t offset, len;
  bool done = false, cancelled = false;
  Status status;
  size_t actual = 0;
};

class InQueue {
 public:
  InQueue(UsbHandle& h, std::span<uint8_t> buf, const UsbQueueOptions& o) : h_(h), buf_(buf), o_(o) {}

  Status Run() {
    while (filled_ < buf_.size() || !reqs_.empty()) {
      if (error_.ok() && !shorted_) SubmitMore();
      if (reqs_.empty()) break;
      Wait();
      Retire();
      if (shorted_ && reqs_.empty()) {
        shorted_ = false;
        next_ = filled_;
      }
    }
    FP_RETURN_IF_ERROR(error_);
    if (filled_ != buf_.size()) return Internal(fmt::format("usb: read {} of {} bytes", filled_, buf_.size()));
    return Status::Ok();
  }

 private:
  void SubmitMore() {
    while (reqs_.size() < std::max<size_t>(o_.depth, 1) && next_ < buf_.size()) {
      size_t len = std::min(o_.transfer_bytes, buf_.size() - next_);
      auto tag = h_.Submit(UsbDir::kIn, buf_.subspan(next_, len));
      if (!tag.ok()) {
        if (tag.status().code() == Code::kBusy && !reqs_.empty()) return;  // after one of ours came back
        Fail(tag.status().WithContext("usb: reading data"));
        return;
      }
      reqs_.push_back({.tag = *tag, .offset = next_, .len = len});
      next_ += len;
    }
  }

  void Wait() {
    auto give_up = std::chrono::steady_clock::now() + kCancelGrace;
    for (;;) {
      auto done = h_.Reap(error_.ok() ? o_.idle : std::chrono::milliseconds(100));
      if (!done.ok()) {
        Fail(done.status());
        if (!Abandoned(give_up)) continue;
        return;
      }
      if (!done->has_value()) {
        if (error_.ok()) {
          Fail(TimedOut(fmt::format("usb: the device sent nothing for {} s", Seconds(o_.idle))));
          continue;
        }
        if (!Abandoned(give_up)) continue;
        return;
      }
      for (Request& r : reqs_) {
        if (r.tag != (*done)->tag || r.done) continue;
        r.done = true;
        r.status = (*done)->status;
        r.actual = std::min((*done)->actual, r.len);
      }
      return;
    }
  }

  // Past the grace after a failure: transfers that never came back are
  // forgotten (the caller's buffer is the kernel's then; say so).
  bool Abandoned(std::chrono::steady_clock::time_point give_up) {
    if (std::chrono::steady_clock::now() < give_up) return false;
    log::Warn("usb: {} read transfers never came back after their cancel", reqs_.size());
    reqs_.clear();
    return true;
  }

  // Finished requests, in the order they were submitted.
  void Retire() {
    while (!reqs_.empty() && reqs_.front().done) {
      Request r = reqs_.front();
      reqs_.pop_front();
      if (!r.status.ok() && !r.cancelled) Fail(r.status.WithContext("usb: reading data"));
      if (!error_.ok()) continue;
      if (r.offset != filled_) std::memmove(buf_.data() + filled_, buf_.data() + r.offset, r.actual);
      filled_ += r.actual;
      if (r.actual < r.len && filled_ < buf_.size() && !shorted_) {
        shorted_ = true;  // the device ended a transfer early: what is in flight is re-placed
        CancelAll();
      }
    }
  }

  void Fail(Status st) {
    if (error_.ok()) error_ = std::move(st);
    CancelAll();
  }

  void CancelAll() {
    for (auto it = reqs_.rbegin(); it != reqs_.rend(); ++it) {
      if (it->done || it->cancelled) continue;
      it->cancelled = true;
      h_.Cancel(it->tag);
    }
  }

  UsbHandle& h_;
  std::span<uint8_t> buf_;
  const UsbQueueOptions& o_;
  std::deque<Request> reqs_;
  size_t next_ = 0, filled_ = 0;
  bool shorted_ = false;
  Status error_;
};

}  // namespace

Status UsbReadExact(UsbHandle& handle, std::span<uint8_t> buf, const UsbQueueOptions& options) {
  return InQueue(handle, buf, options).Run();
}

}  // namespace flashpipe::host
