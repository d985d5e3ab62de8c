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
// VerifyOnDevice checks each range with what the device has, in this order:
//  1. `oem digest PART:OFFSET:SIZE` (flashpipe serve: two INFO lines
//     "sha256 1/2 <32 hex>" and "sha256 2/2 <32 hex>", then OKAY;
//     docs/design.md): the device hashes, nothing comes back but 32 bytes.
//  2. read-back with fastbootd's `fetch:PART:0xOFFSET:0xSIZE` when the
//     device refused (FAIL) the first oem digest or answered it without a
//     digest: each range in fetches of at most the device's max-fetch-size
//     (else its max-download-size, else 256 MiB), hashed on the host as the
//     bytes arrive (FastbootClient::Fetch: at most 1 MiB held).
//  3. neither: the partition stays written, not verified, and the result
//     says what each command answered (VerifyResult::unavailable).
// A different digest is kMismatch naming the partition, the range and the
// method; a device that breaks off, or fails a later command after the
// first one worked, is that error. Status OK with an empty method and a
// non-empty `unavailable` is "could not verify".
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

struct VerifyResult {
  // "digest" (oem digest) or "readback" (fetch:), once the device started
  // answering with one; "" when it had neither (or the image no ranges).
  std::string method;
  // Why the device could not verify ("" when it could): what each command
  // answered, "oem digest: remote: '...'; fetch: remote: '...'".
  std::string unavailable;
};

// The largest fetch the device takes: getvar max-fetch-size, else
// max-download-size, else 256 MiB; never above 1 GiB. An answer that is not
// a size is an error (never read as "no limit").
Result<uint32_t> FetchLimit(FastbootClient& client);

Status VerifyOnDevice(FastbootClient& client, const std::string& partition, const std::vector<DigestRange>& ranges,
                      VerifyResult* result);

}  // namespace flashpipe::host
