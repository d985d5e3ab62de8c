// UsbServer: fastboot on one USB function (a FunctionFS instance whose
// descriptors are written: ep0 and the bulk endpoints).
//
// Two threads. The ep0 thread follows the host through ep0's events: ENABLE
// (the host configured the device) starts serving it, DISABLE and UNBIND
// (cable pulled, host reset, UDC unbound) end that at once: every queued
// request fails and the session ends without a reply; control requests
// addressed to the function (SETUP) are stalled, since fastboot defines
// none. SUSPEND and RESUME change nothing.
//
// The session thread serves one enabled host at a time through a
// FfsConnection. A USB host never "disconnects" between fastboot commands,
// so the device is taken only while the host has something to say: when a
// command arrives the thread takes the device (FastbootDevice::TryAcquire)
// and runs a Session; while that session waits for its next command it
// gives way to a TCP or UDP client that asks (AskToYield), and takes the
// device again with the host's next command. A command that finds the device
// taken is answered with the same "busy: ..." FAIL as the other transports.
// After reboot*/continue the session's responses are flushed and `reenumerate`
// (when given: the daemon owns the gadget) detaches from the bus and attaches
// again, as a rebooting device would.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "base/unique_fd.h"
#include "fastboot/device.h"
#include "fastboot/ffs_connection.h"
#include "fastboot/usb_endpoints.h"

namespace flashpipe::fastboot {

// Writes the fastboot descriptors and strings to a fresh FunctionFS ep0.
Status WriteFunctionDescriptors(int ep0, std::string_view where);

struct UsbServerOptions {
  UsbOptions transport;
  std::string name = "usb";  // in logs and the busy message ("usb dummy_udc.0")
  std::function<void()> reenumerate;
};

class UsbServer {
 public:
  // `ep0_read` delivers events and takes stalls by reads; `ep0_write` takes
  // stalls by writes (the same FunctionFS ep0 fd; two pipes in tests).
  UsbServer(FastbootDevice* device, int ep0_read, int ep0_write, BulkEndpoints* endpoints,
            UsbServerOptions options);
  ~UsbServer();  // Stop()

  void Start();
  // Ends both threads; every request is given back. Idempotent.
  void Stop();

  struct Stats {
    std::atomic<unsigned> events{0};
    std::atomic<unsigned> stalled{0};   // SETUP requests refused
    std::atomic<unsigned> hosts{0};     // ENABLEs served
    std::atomic<unsigned> sessions{0};
    std::atomic<unsigned> busy{0};      // commands refused: device taken
  };
  const Stats& stats() const { return stats_; }
  bool enabled() const;

 private:
  void Ep0Loop();
  Status HandleEvents();
  void SessionLoop();
  void ServeHost();

  FastbootDevice* device_;
  int ep0_read_, ep0_write_;
  UsbServerOptions options_;
  FfsConnection transport_;
  UniqueFd stop_fd_;  // eventfd: ends the ep0 thread's poll

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool enabled_ = false;
  uint64_t epoch_ = 0;  // ENABLEs seen
  bool stop_ = false;
  std::atomic<bool> stopping_{false};
  Stats stats_;
  std::thread ep0_thread_, session_thread_;
};

}  // namespace flashpipe::fastboot
