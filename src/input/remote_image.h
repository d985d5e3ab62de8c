// Images from where they live: an http(s) URL as an image spec, and the
// checks of a bmap's signature and a file's SHA-256 that go with it.
//
// OpenUrlImage probes the URL (size, validator, the first 64 KiB, which
// tell the image's form), finds its bmap (given, or beside the URL as
// FindBmap looks beside a file: IMAGE.bmap, then without each suffix),
// checks the bmap's signature, and decides what the run needs of the file:
//   raw image + bmap              the bmap's mapped ranges, nothing else
//   sparse, compressed, raw       the whole file, streamed (a sparse file is
//                                 headers and payload: all of it is written)
//   --sha256 or SHA256SUMS        the whole file (its digest covers all of it)
// Those bytes are fetched into the URL's cache entry (fetch/remote_file.h)
// while the image's usual source reads them from it as they arrive
// (BmapFileSource waiting per range, a stream reader waiting per slice), so
// the write goes on at the network's pace. An entry that already holds them
// is read as a local file. The source's Run ends only once the fetch has:
// every byte checked (the SHA-256 too), before the sink's OnEnd, so a file
// target is not committed over an image that failed its check; a device
// written in place is then reported partly written, as bmaptool leaves it.
// FetchImage does the same without writing: the whole fetch first, then a
// local path (for the host, dump, bmap create and later the station's plan).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "input/bmap.h"
#include "input/image_source.h"

namespace flashpipe::input {

Result<std::unique_ptr<ImageSource>> OpenUrlImage(const std::string& url, const SourceOptions& options);

// A bmap read from a path or a URL with its signature checked (inline, or
// BMAP.asc / BMAP.sig beside it) as options.signature asks.
struct CheckedBmap {
  Bmap bmap;
  std::string text;       // its XML (a clear-signed one's signed text)
  std::string signed_by;  // fingerprint of the good signature; "" unsigned
};
Result<CheckedBmap> LoadCheckedBmap(const std::string& spec, const SourceOptions& options);

// The names tried for a bmap beside an image URL (FindBmap's, on the URL's path).
std::vector<std::string> BmapUrlCandidates(const std::string& url);

// A local file's SHA-256 against `expected`, before anything is written.
// stdin and parts cannot be read twice: kUnsupported.
Status CheckFileSha256(const std::string& spec, const std::string& expected);

// options.fetch.sha256 from a SHA256SUMS file or URL, for `image`.
Status ApplySha256Sums(const std::string& sums, const std::string& image, SourceOptions* options);

struct FetchedImage {
  std::string path;             // a local path of the image (the cache entry)
  std::string bmap;             // a local path of its bmap, "" none
  fetch::FetchReport report;
  ImageSource::Provenance provenance;
  std::shared_ptr<void> keep;   // holds the entry in use; the paths live as long
};
Result<FetchedImage> FetchImage(const std::string& url, const SourceOptions& options);

}  // namespace flashpipe::input
