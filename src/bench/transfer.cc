#include "bench/transfer.h"

#include <charconv>
#include <cstring>
#include <random>

#include "base/aligned_buffer.h"
#include "base/crc32.h"

namespace flashpipe::bench {
namespace {

template <typename T>
Result<std::vector<T>> ParseList(std::string_view text, const char* what,
                                 Result<T> (*one)(std::string_view)) {
  std::vector<T> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    FP_ASSIGN_OR_RETURN(T v, one(text.substr(0, comma)));
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (out.empty()) return InvalidArgument(fmt::format("empty list of {}", what));
  return out;
}

Result<Mode> ParseMode(std::string_view t) {
  if (t == "blocking") return Mode::kBlocking;
  if (t == "non-blocking" || t == "nonblocking") return Mode::kNonBlocking;
  if (t == "queued") return Mode::kQueued;
  return InvalidArgument(fmt::format("mode '{}': want blocking, non-blocking or queued", t));
}

Result<Direction> ParseDirection(std::string_view t) {
  if (t == "write") return Direction::kWrite;
  if (t == "read") return Direction::kRead;
  return InvalidArgument(fmt::format("direction '{}': want write or read", t));
}

// The per-request host work, and the buffers it works on.
class Work {
 public:
  Work(const TransferSpec& spec, Clock& clock) : spec_(spec), clock_(clock) {
    source_ = AlignedBuffer(spec.request, spec.mem_align);
    std::mt19937_64 rng(spec.request);
    for (size_t i = 0; i + 8 <= source_.size(); i += 8) {
      uint64_t v = rng();
      std::memcpy(source_.data() + i, &v, 8);
    }
    for (unsigned i = 0; i < spec.depth; ++i) {
      buffers_.emplace_back(spec.request, spec.mem_align);
      std::memcpy(buffers_.back().data(), source_.data(), spec.request);
    }
  }
  uint8_t* buffer(unsigned i) { return buffers_[i].data(); }
  uint32_t checksum() const { return checksum_; }

  // Write: fill buffer i; read: consume it.
  void Do(unsigned i) {
    uint8_t* b = buffers_[i].data();
    switch (spec_.prep.kind) {
      case Prep::kNone: break;
      case Prep::kCopy:
        if (spec_.direction == Direction::kWrite) std::memcpy(b, source_.data(), spec_.request);
        else std::memcpy(source_.data(), b, spec_.request);
        checksum_ += b[spec_.request - 1];
        break;
      case Prep::kCrc: checksum_ = Crc32Update(checksum_, b, spec_.request); break;
      case Prep::kSpin: clock_.Spend(spec_.prep.spin_ns); break;
    }
  }

 private:
  const TransferSpec& spec_;
  Clock& clock_;
  AlignedBuffer source_;  // data copied in (writes) or out (reads)
  std::vector<AlignedBuffer> buffers_;
  uint32_t checksum_ = 0;
};

Status Submit(io::IoQueue& q, const TransferSpec& spec, Work& work, uint64_t k, unsigned buf) {
  io::IoOp op;
  op.kind = spec.direction == Direction::kWrite ? io::OpKind::kWrite : io::OpKind::kRead;
  op.offset = spec.offset + k * spec.request;
  op.length = spec.request;
  op.buf = work.buffer(buf);
  op.tag = buf;
  return q.Submit(op);
}

Result<unsigned> WaitOne(io::IoQueue& q) {
  FP_ASSIGN_OR_RETURN(io::IoCompletion c, q.Wait());
  if (!c.status.ok()) return c.status;
  return static_cast<unsigned>(c.tag);
}

// Cancelled: what is in flight completes, then the flag's status.
Status Stop(io::IoQueue& q, const TransferSpec& spec) {
  if (spec.cancel == nullptr || !spec.cancel->cancelled()) return Status::Ok();
  while (q.in_flight() > 0) (void)q.Wait();
  return spec.cancel->Check();
}

// Prepare, submit; when all buffers are in flight, wait for one first.
Status RunWrites(io::IoQueue& q, const TransferSpec& spec, Work& work) {
  std::vector<unsigned> free;
  for (unsigned i = spec.depth; i > 0; --i) free.push_back(i - 1);
  for (uint64_t k = 0; k < spec.count; ++k) {
    FP_RETURN_IF_ERROR(Stop(q, spec));
    if (free.empty()) {
      FP_ASSIGN_OR_RETURN(unsigned b, WaitOne(q));
      free.push_back(b);
    }
    unsigned b = free.back();
    free.pop_back();
    work.Do(b);
    FP_RETURN_IF_ERROR(Submit(q, spec, work, k, b));
  }
  while (q.in_flight() > 0) FP_RETURN_IF_ERROR(WaitOne(q).status());
  return q.Sync();
}

// Keep `depth` reads in flight; consume each completed buffer, then reuse it.
Status RunReads(io::IoQueue& q, const TransferSpec& spec, Work& work) {
  uint64_t next = 0;
  for (unsigned b = 0; b < spec.depth && next < spec.count; ++b) {
    FP_RETURN_IF_ERROR(Submit(q, spec, work, next++, b));
  }
  while (q.in_flight() > 0) {
    FP_ASSIGN_OR_RETURN(unsigned b, WaitOne(q));
    work.Do(b);
    if (next < spec.count) {
      FP_RETURN_IF_ERROR(Stop(q, spec));
      FP_RETURN_IF_ERROR(Submit(q, spec, work, next++, b));
    }
  }
  return Status::Ok();
}

}  // namespace

const char* DirectionName(Direction d) { return d == Direction::kWrite ? "write" : "read"; }

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kBlocking: return "blocking";
    case Mode::kNonBlocking: return "non-blocking";
    case Mode::kQueued: return "queued";
  }
  return "?";
}

Result<std::vector<Mode>> ParseModes(std::string_view text) {
  return ParseList<Mode>(text, "modes", ParseMode);
}

Result<std::vector<Direction>> ParseDirections(std::string_view text) {
  return ParseList<Direction>(text, "directions", ParseDirection);
}

unsigned ModeDepth(Mode m, unsigned queue_depth) {
  switch (m) {
    case Mode::kBlocking: return 1;
    case Mode::kNonBlocking: return 2;
    case Mode::kQueued: return queue_depth;
  }
  return 1;
}

Result<Prep> ParsePrep(std::string_view text) {
  if (text == "none") return Prep{Prep::kNone, 0};
  if (text == "copy") return Prep{Prep::kCopy, 0};
  if (text == "crc") return Prep{Prep::kCrc, 0};
  if (text.starts_with("spin:")) {
    std::string_view us = text.substr(5);
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(us.data(), us.data() + us.size(), v);
    if (ec == std::errc() && p == us.data() + us.size() && !us.empty()) return Prep{Prep::kSpin, v * 1000};
  }
  return InvalidArgument(fmt::format("prep '{}': want none, copy, crc or spin:MICROSECONDS", text));
}

std::string PrepName(const Prep& prep) {
  switch (prep.kind) {
    case Prep::kNone: return "none";
    case Prep::kCopy: return "copy";
    case Prep::kCrc: return "crc";
    case Prep::kSpin: return fmt::format("spin:{}", prep.spin_ns / 1000);
  }
  return "?";
}

Result<TransferResult> RunTransfer(io::IoQueue& queue, Clock& clock, const TransferSpec& spec) {
  if (spec.request == 0 || spec.count == 0 || spec.depth == 0) {
    return InvalidArgument("transfer: request, count and depth must be > 0");
  }
  if (queue.depth() < spec.depth || queue.in_flight() != 0) {
    return InvalidArgument(fmt::format("transfer: queue {} has depth {} with {} in flight, need {} free",
                                       queue.name(), queue.depth(), queue.in_flight(), spec.depth));
  }
  Work work(spec, clock);
  const uint64_t start = clock.Now();
  Status s = spec.direction == Direction::kWrite ? RunWrites(queue, spec, work)
                                                 : RunReads(queue, spec, work);
  const uint64_t end = clock.Now();
  if (!s.ok()) {
    // The buffers die with `work`: nothing may still be transferring into them.
    while (queue.in_flight() > 0) {
      if (!queue.Wait().ok()) break;
    }
    return s.WithContext(fmt::format("{} {} x {} bytes at offset {}", DirectionName(spec.direction),
                                     spec.count, spec.request, spec.offset));
  }
  TransferResult r;
  r.direction = spec.direction;
  r.mode = spec.mode;
  r.depth = spec.depth;
  r.request = spec.request;
  r.count = spec.count;
  r.ns = end - start;
  r.checksum = work.checksum();
  return r;
}

}  // namespace flashpipe::bench
