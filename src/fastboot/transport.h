// Transport: how a fastboot session exchanges messages with one client,
// whatever carries them (TCP frames, UDP packets, a scripted test double).
//
// The protocol has two kinds of host traffic: commands, which are whole
// messages (one TCP frame, one run of UDP packets ending without the
// continuation flag), and the data phase of a download, which is a plain byte
// count that may arrive in any slicing. ReadCommand returns the next message;
// ReadData returns the next bytes of the data phase, ignoring message
// boundaries. Send writes one response message (<= 64 bytes, see protocol.h).
//
// A Status of code kCancelled means the client went away (TCP close, UDP
// takeover, idle timeout): the session ends without answering. kTimedOut
// means the deadline the session set (set_deadline) has passed: the session
// decides whether that ends it (its own time limit) or not (a point where it
// measures a download's rate). Other errors describe malformed input the
// session may answer with FAIL.
// One session thread uses a transport at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace flashpipe::fastboot {

class Transport {
 public:
  virtual ~Transport() = default;
  // The next command message. A message longer than max_size is consumed and
  // reported as kInvalidArgument (the session FAILs it and carries on).
  virtual Result<std::string> ReadCommand(size_t max_size) = 0;
  // REQUIRES: !out.empty(). Fills 1..out.size() bytes of the data phase.
  virtual Result<size_t> ReadData(std::span<uint8_t> out) = 0;
  virtual Status Send(std::string_view message) = 0;
  // "tcp 127.0.0.1:40122", for logs.
  virtual std::string peer() const = 0;
  // Whether the client has gone away, without waiting (asked while a long
  // command, an oem hook, runs). A transport that cannot tell says false.
  virtual bool ClientGone() { return false; }

  // ReadCommand and ReadData wait no later than this (max(): no limit).
  using Deadline = std::chrono::steady_clock::time_point;
  void set_deadline(Deadline deadline) { deadline_ = deadline; }
  Deadline deadline() const { return deadline_; }

 private:
  Deadline deadline_ = Deadline::max();
};

}  // namespace flashpipe::fastboot
