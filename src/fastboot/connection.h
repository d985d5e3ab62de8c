// Connection: how a fastboot session exchanges messages with one client,
// whatever carries them (TCP frames, UDP packets, USB bulk transfers, a
// scripted test double).
//
// The protocol has two kinds of host traffic: commands, which are whole
// messages (one TCP frame, one run of UDP packets ending without the
// continuation flag, one USB transfer), and the data phase of a download,
// which is a plain byte count that may arrive in any slicing. ReadCommand
// returns the next message; ReceiveDownload puts the data phase where a
// DownloadTarget (the device's download buffer) wants it, ignoring message
// boundaries. Send writes one response message (<= 64 bytes, see
// protocol.h).
//
// The device sends data too (fetch, upload): after a DATA%08x response the
// host reads exactly that many bytes as one data phase. BeginData announces
// it (before the DATA response is sent; nothing goes out yet), SendData
// sends its bytes in order and in any slicing, then the next Send is the
// final response. Each transport frames the phase as its clients read it:
// TCP as one frame, UDP as one message of continued packets, each answering
// a poll, USB as bulk IN transfers of whole packets with a short one only at
// the end and no zero-length packet. max_data() is the largest phase the
// transport can carry so that every client reads it (0: none).
//
// A Status of code kCancelled means the client went away (TCP close, UDP
// takeover, USB host gone, idle timeout): the session ends without
// answering. kTimedOut means the deadline the session set (set_deadline)
// has passed: the session decides whether that ends it (its own time limit)
// or not (a point where it judges a download's rate, after which it calls
// ReceiveDownload again to go on). Other errors describe malformed input the
// session may answer with FAIL. One session thread uses a transport at a
// time. The USB transport honours deadlines in downloads, at its read
// boundaries (the reads in flight land first); between commands a USB
// session already gives way to any other client.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace flashpipe::fastboot {

// Where the bytes of one download land (Landing, download.h).
class DownloadTarget {
 public:
  virtual ~DownloadTarget() = default;
  // Where the next bytes go: up to Window().size() are wanted now, and
  // Window().data() has room for every byte still due (remaining()).
  virtual std::span<uint8_t> Window() = 0;
  // How many leading bytes of the last Window() keep their place whatever
  // they turn out to be: several receives may be in flight into them. Past
  // them the target may move bytes it was given (at most one receive there).
  virtual uint64_t settled() const = 0;
  // `n` bytes (at most remaining()) were put at Window().data(); more than
  // Window().size() is fine.
  virtual void Arrived(size_t n) = 0;
  virtual uint64_t received() const = 0;
  virtual uint64_t remaining() const = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;
  // The next command message. A message longer than max_size is consumed and
  // reported as kInvalidArgument (the session FAILs it and carries on).
  virtual Result<std::string> ReadCommand(size_t max_size) = 0;
  // Receives the data phase until target.remaining() is 0.
  virtual Status ReceiveDownload(DownloadTarget& target) = 0;
  virtual Status Send(std::string_view message) = 0;
  // "tcp 127.0.0.1:40122", for logs.
  virtual std::string peer() const = 0;
  // Whether the client has gone away, without waiting (asked while a long
  // command, an oem hook, runs). A transport that cannot tell says false.
  virtual bool ClientGone() { return false; }

  // The data phase of an upload (see above). REQUIRES: 0 < total <=
  // max_data(); SendData gets exactly `total` bytes in all.
  virtual uint64_t max_data() const { return 0; }
  virtual Status BeginData(uint64_t /*total*/) { return Unsupported("this transport sends no data"); }
  virtual Status SendData(std::span<const uint8_t> /*bytes*/) { return Unsupported("this transport sends no data"); }

  // ReadCommand and ReceiveDownload wait no later than this (max(): no limit).
  using Deadline = std::chrono::steady_clock::time_point;
  void set_deadline(Deadline deadline) { deadline_ = deadline; }
  Deadline deadline() const { return deadline_; }

 private:
  Deadline deadline_ = Deadline::max();
};

// A transport whose data phase is a byte stream read a slice at a time into
// the target's window (TCP, UDP, the scripted test double).
class StreamConnection : public Connection {
 public:
  // REQUIRES: !out.empty(). Fills 1..out.size() bytes of the data phase.
  virtual Result<size_t> ReadData(std::span<uint8_t> out) = 0;
  // kTimedOut at the deadline, also while bytes keep coming; the target
  // keeps what arrived, and the next call goes on from there.
  Status ReceiveDownload(DownloadTarget& target) final {
    while (target.remaining() > 0) {
      if (std::chrono::steady_clock::now() >= deadline()) return TimedOut("deadline passed");
      FP_ASSIGN_OR_RETURN(size_t n, ReadData(target.Window()));
      target.Arrived(n);
    }
    return Status::Ok();
  }
};

}  // namespace flashpipe::fastboot
