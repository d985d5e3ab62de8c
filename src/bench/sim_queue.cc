#include "bench/sim_queue.h"

#include <algorithm>

#include "base/units.h"

namespace flashpipe::bench {
namespace {

constexpr std::string_view kPrefix = "sim:";

Status ApplyKey(SimSpec& spec, std::string_view key, std::string_view value) {
  if (key == "size") {
    FP_ASSIGN_OR_RETURN(spec.size, ParseSize(value));
  } else if (key == "bw") {
    FP_ASSIGN_OR_RETURN(spec.bw, ParseRate(value));
  } else if (key == "zero_bw") {
    FP_ASSIGN_OR_RETURN(spec.zero_bw, ParseRate(value));
  } else if (key == "cmd_us") {
    FP_ASSIGN_OR_RETURN(uint64_t us, ParseRate(value));
    spec.cmd_ns = us * 1000;
  } else if (key == "lbs") {
    FP_ASSIGN_OR_RETURN(uint64_t lbs, ParseSize(value));
    if (lbs < 512 || lbs > 65536 || (lbs & (lbs - 1)) != 0) {
      return InvalidArgument(fmt::format("lbs={} is not a power of two in 512..64K", value));
    }
    spec.lbs = static_cast<uint32_t>(lbs);
  } else if (key == "time") {
    if (value == "virtual") spec.time = SimTime::kVirtual;
    else if (value == "real") spec.time = SimTime::kReal;
    else return InvalidArgument(fmt::format("time={}: want virtual or real", value));
  } else {
    return InvalidArgument(fmt::format("unknown key '{}' (size, bw, cmd_us, lbs, zero_bw, time)", key));
  }
  return Status::Ok();
}

const char* OpName(io::OpKind kind) {
  switch (kind) {
    case io::OpKind::kWrite: return "write";
    case io::OpKind::kRead: return "read";
    case io::OpKind::kZeroOut: return "zeroout";
    case io::OpKind::kDiscard: return "discard";
    case io::OpKind::kPunchHole: return "punch-hole";
  }
  return "op";
}

uint64_t TransferNs(uint64_t bytes, uint64_t rate) {
  unsigned __int128 n = static_cast<unsigned __int128>(bytes) * 1'000'000'000u;
  return static_cast<uint64_t>((n + rate - 1) / rate);
}

}  // namespace

bool IsSimTarget(std::string_view target) { return target.starts_with(kPrefix); }

Result<SimSpec> ParseSimSpec(std::string_view target) {
  if (!IsSimTarget(target)) return InvalidArgument(fmt::format("'{}' is not a sim: target", target));
  SimSpec spec;
  std::string_view rest = target.substr(kPrefix.size());
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(fmt::format("{}: '{}' is not key=value", target, item));
    }
    Status s = ApplyKey(spec, item.substr(0, eq), item.substr(eq + 1));
    if (!s.ok()) return s.WithContext(target);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (spec.bw == 0) return InvalidArgument(fmt::format("{}: bw must be > 0", target));
  if (spec.size < spec.lbs || spec.size % spec.lbs != 0) {
    return InvalidArgument(fmt::format("{}: size must be a multiple of lbs={}", target, spec.lbs));
  }
  return spec;
}

std::string FormatSimSpec(const SimSpec& spec) {
  std::string s = fmt::format("sim:size={},bw={},cmd_us={},lbs={}", spec.size, spec.bw,
                              spec.cmd_ns / 1000, spec.lbs);
  if (spec.zero_bw != 0) s += fmt::format(",zero_bw={}", spec.zero_bw);
  s += spec.time == SimTime::kReal ? ",time=real" : ",time=virtual";
  return s;
}

io::Geometry SimGeometry(const SimSpec& spec) {
  io::Geometry g;
  g.size = spec.size;
  g.logical_block = spec.lbs;
  g.physical_block = spec.lbs;
  g.mem_align = 4096;
  g.offset_align = spec.lbs;
  g.max_request = uint64_t{1} << 20;  // what an eMMC host typically allows per request
  g.block_device = true;  // so writers zero ranges with kZeroOut, as on an eMMC
  g.direct = true;
  return g;
}

uint64_t SimServiceNs(const SimSpec& spec, io::OpKind kind, uint64_t bytes) {
  switch (kind) {
    case io::OpKind::kWrite:
    case io::OpKind::kRead:
      return spec.cmd_ns + TransferNs(bytes, spec.bw);
    case io::OpKind::kZeroOut:
      return spec.cmd_ns + TransferNs(bytes, spec.zero_bw != 0 ? spec.zero_bw : spec.bw);
    case io::OpKind::kDiscard:
    case io::OpKind::kPunchHole:
      return spec.cmd_ns;
  }
  return spec.cmd_ns;
}

SimQueue::SimQueue(const SimSpec& spec, Clock* clock, unsigned depth)
    : spec_(spec), clock_(clock), depth_(std::max(depth, 1u)) {}

Status SimQueue::Check(const io::IoOp& op) const {
  if (pending_.size() >= depth_) {
    return Internal(fmt::format("sim: submit with {} of {} requests in flight", pending_.size(), depth_));
  }
  if (op.length == 0 || op.offset % spec_.lbs != 0 || op.length % spec_.lbs != 0) {
    return InvalidArgument(fmt::format("sim: {} at offset {} length {} not aligned to lbs {}",
                                       OpName(op.kind), op.offset, op.length, spec_.lbs));
  }
  if (op.offset > spec_.size || op.length > spec_.size - op.offset) {
    return NoSpace(fmt::format("sim: {} at offset {} length {} beyond the device end {}",
                               OpName(op.kind), op.offset, op.length, spec_.size));
  }
  return Status::Ok();
}

Status SimQueue::Submit(const io::IoOp& op) {
  FP_RETURN_IF_ERROR(Check(op));
  const uint64_t service = SimServiceNs(spec_, op.kind, op.length);
  const uint64_t start = std::max(clock_->Now(), busy_until_);
  busy_until_ = start + service;
  pending_.push_back({op.tag, busy_until_});
  stats_.requests++;
  stats_.busy_ns += service;
  if (op.kind == io::OpKind::kWrite || op.kind == io::OpKind::kRead) stats_.bytes += op.length;
  return Status::Ok();
}

Result<io::IoCompletion> SimQueue::Wait() {
  if (pending_.empty()) return Internal("sim: Wait with nothing in flight");
  Pending p = pending_.front();
  pending_.pop_front();
  clock_->SleepUntil(p.done_ns);
  return io::IoCompletion{p.tag, Status::Ok()};
}

}  // namespace flashpipe::bench
