// USB data phases kept in flight on a UsbHandle's asynchronous transfers
// (usb_backend.h): the host's side of fastboot's download (bulk OUT) and of
// fetch:/upload (bulk IN), so the bus never waits for the host to submit the
// next transfer (the AOSP client sends one synchronous 16 KiB transfer at a
// time).
//
// Defaults: 4 transfers of 1 MiB in flight (kUsbTransferBytes,
// kUsbQueueDepth), chosen by bench/usb_host_bench.sh inside the test VM
// (bench/results/usb_host_bench.md): 4 MiB in flight per device stays well
// inside the kernel's usbfs_memory_mb (16 MiB for the whole system by
// default), so four devices flash at once at full depth; a submit refused
// for memory waits for one of the queue's own transfers and tries again.
// FLASHPIPE_USB_QUEUE=BYTES:DEPTH (e.g. 256K:8) overrides both, for
// benchmarks.
//
// UsbOutQueue copies the caller's bytes (or reads a file's) into its own
// transfer buffers, so
// Write returns as soon as they are submitted (only the last, partly filled
// buffer waits for the next Write or for Drain) and the caller may reuse its
// memory; Drain submits that buffer and waits for every transfer. The bytes
// go in order as transfers cut anywhere (the device counts the bytes of a
// data phase) and never with a zero-length packet (the fastboot USB rule: a
// device may read one as an empty command). A transfer that does not come
// back for `idle` is kTimedOut ("the device took no data for N s"); a
// device that went away is kCancelled; after the first failure every
// transfer in flight is cancelled and reaped before the call returns, and
// the queue keeps failing with that status (the byte stream has a hole).
//
// UsbReadExact reads exactly buf.size() bytes of a device-to-host data phase
// into buf, up to `depth` IN transfers in flight, never asking for more than
// is still due (a request past the end would swallow the device's OKAY).
// Every transfer but the last is a whole number of packets (1 KiB divides
// every transfer size; SuperSpeed packets are 1 KiB). A transfer the device
// ended early (a short packet) cancels the later ones; their bytes are kept
// in order, moved down to follow it, and the rest is asked for again.
// kTimedOut when nothing came for `idle`; kCancelled when the device went
// away; every transfer is reaped before it returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "host/usb_backend.h"

namespace flashpipe::host {

inline constexpr size_t kUsbTransferBytes = 1 << 20;
inline constexpr size_t kUsbQueueDepth = 4;

struct UsbQueueOptions {
  size_t transfer_bytes = kUsbTransferBytes;  // a multiple of 1 KiB
  size_t depth = kUsbQueueDepth;
  std::chrono::milliseconds idle{60000};
};

// The defaults, or FLASHPIPE_USB_QUEUE's; `idle` as given.
UsbQueueOptions UsbQueueFromEnv(std::chrono::milliseconds idle);

class UsbOutQueue {
 public:
  UsbOutQueue(UsbHandle& handle, const UsbQueueOptions& options);
  ~UsbOutQueue();  // cancels and reaps whatever is in flight
  UsbOutQueue(const UsbOutQueue&) = delete;
  UsbOutQueue& operator=(const UsbOutQueue&) = delete;

  Status Write(std::span<const std::span<const uint8_t>> pieces);
  // `n` bytes of `file` from `offset`, read straight into the transfer
  // buffers (no window in between); a file that ends early is kCorrupt.
  Status WriteFile(int file, uint64_t offset, uint64_t n);
  Status Drain();
  // How many transfers are in flight (for tests).
  size_t in_flight() const;

 private:
  struct Slot {
    std::vector<uint8_t> buf;
    size_t used = 0;
    uint64_t tag = 0;
    bool busy = false;
  };
  // The staged buffer's free space (a free one staged first).
  Result<std::span<uint8_t>> Room();
  Status Filled(size_t n);
  Status SubmitStaged();
  Status WaitOne();
  Status Fail(Status st);
  void CancelAll();
  Slot* FreeSlot();

  UsbHandle& handle_;
  UsbQueueOptions options_;
  std::vector<Slot> slots_;
  Slot* staged_ = nullptr;  // being filled, not submitted
  Status failed_;
};

Status UsbReadExact(UsbHandle& handle, std::span<uint8_t> buf, const UsbQueueOptions& options);

}  // namespace flashpipe::host
