// `flashpipe fastboot`: the verbs people type with the AOSP client, with
// its names, arguments, order of work and output (aosp_output.h), so that a
// script switches by changing the program name. What runs is this
// project's: images are read once and cut for the device's own
// max-download-size (parts with no padding bugs), zero blocks never sent.
//
// Commands run in order, as the AOSP client runs them: getvar VAR, flash
// PART [IMAGE] (IMAGE from the product folder when left out), erase PART,
// set_active SLOT, flashall, flashing lock|unlock|lock_critical|
// unlock_critical|get_unlock_ability, oem ..., continue; reboot
// [bootloader|fastboot|recovery] (and reboot-bootloader, ...) happens
// after them, as do -w and --set-active. devices [-l] lists the fastboot
// USB devices. A device that does not answer is waited for
// ("< waiting for X >"), as the AOSP client does.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "host/usb_backend.h"
#include "input/image_source.h"

namespace flashpipe::host {

struct FastbootArgs {
  std::string serial;         // -s (else $ANDROID_SERIAL, else the first USB device)
  uint64_t sparse_limit = 0;  // -S: parts no larger, max-download-size not asked
  std::string slot;           // --slot a|b|other|all
  std::optional<std::string> set_active;  // --set-active[=SLOT]
  bool skip_reboot = false, skip_secondary = false, wipe = false, force = false, long_listing = false;
  std::string product_dir;    // --dir (else $ANDROID_PRODUCT_OUT)
  std::chrono::milliseconds timeout{120000};
  std::vector<std::string> commands;
  // An http(s) image (`flash PART URL`): how it is fetched (input/remote_image.h).
  input::SourceOptions sources;
};

// A usage error (unknown command, a missing argument) is kInvalidArgument
// and sets *usage.
Status RunFastboot(const FastbootArgs& args, UsbBackend* usb, bool* usage);

}  // namespace flashpipe::host
