// Verify (`flashpipe flash --verify`): proof that what landed on a device
// is what was sent, without sending it back.
//
// ImageDigests reads the image once more (input::OpenImage: raw, sparse,
// compressed, with a bmap) and returns the SHA-256 of each range the image
// defines: RAW and FILL bytes whose offsets follow on from each other form
// one range, a DONT_CARE (a sparse gap, a bmap-unmapped range) ends it, so
// bytes the image leaves alone are never compared. A raw image's range ends
// at its last byte (a padded last block is not compared). Images of
// overlaid parts ("a.simg,b.simg") are refused: their ranges overlap.
//
// VerifyOnDevice asks the device for each range's digest with the daemon's
// `oem digest PART:OFFSET:SIZE` (two INFO lines "sha256 1/2 <32 hex>" and
// "sha256 2/2 <32 hex>", then OKAY; docs/design.md) and compares: a
// different digest is kMismatch naming the partition and the range; a
// device without the command FAILs (refused).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "host/fastboot_client.h"
#include "host/image_pass.h"

namespace flashpipe::host {

struct DigestRange {
  uint64_t offset = 0, size = 0;
  std::string sha256;  // 64 lowercase hex digits
};

Result<std::vector<DigestRange>> ImageDigests(const ImageSpec& spec);

// The digest from a device's INFO lines ("" when they hold none).
std::string DigestFromInfo(const std::vector<std::string>& lines);

Status VerifyOnDevice(FastbootClient& client, const std::string& partition, const std::vector<DigestRange>& ranges,
                      bool* unavailable);

}  // namespace flashpipe::host
