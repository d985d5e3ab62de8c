// The flags of every command that takes an image, for images at http(s)
// URLs and for checking where an image came from (one spelling for all:
// write, flash, fastboot, bmap create, dump):
//   --cacert FILE            CA certificates (PEM) instead of the system store
//   --connect-timeout S      seconds to connect (default 15)
//   --speed-limit BYTES --speed-time S
//                            an attempt slower than BYTES/s (default 1K) for S
//                            seconds (default 20) is dropped and resumed
//   --fetch-retries N        attempts in a row without a new byte (default 5)
//   --connections N          at once per image (default 4)
//   --cache DIR | --no-cache the download cache (default $XDG_CACHE_HOME/flashpipe)
//   --cache-max SIZE         least recently used entries go past this (default 20G)
//   --sha256 HEX | --sha256sums FILE|URL   the image file's expected SHA-256
//   --keyring FILE, --fingerprint FPR, --no-sig-verify   bmap signatures
// Proxies come from the environment (http_proxy, https_proxy, no_proxy).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/cancel.h"
#include "base/status.h"
#include "input/image_source.h"

namespace flashpipe::tools {

struct FetchFlags {
  std::string cacert, cache_dir, cache_max = "20G", speed_limit = "1K";
  double connect_timeout = 15, speed_time = 20;
  unsigned retries = 5, connections = 4;
  bool no_cache = false;
  std::string sha256, sha256sums;
  std::string keyring, fingerprint;
  bool no_sig_verify = false;
};

// `with_digest`: also --sha256 and --sha256sums (commands of one image).
void AddFetchFlags(CLI::App& app, FetchFlags& flags, bool with_digest = true);
// The flags into `options`; `image` names the image --sha256sums is looked
// up for ("" when the command has several: then --sha256 is refused).
Status ApplyFetchFlags(const FetchFlags& flags, const std::string& image, input::SourceOptions* options,
                       const CancelFlag* cancel = nullptr);

}  // namespace flashpipe::tools
