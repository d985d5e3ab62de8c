// ImageSource: one image to write, whatever its form, delivered to an
// ImageSink as RAW/FILL/SKIP events with image offsets. OpenImage picks the
// form by magic bytes (detect.h), never by file name:
//
//   spec            content                 source
//   file, seekable  sparse                  SparseFileSource: read ahead
//                                           (sparse::ReadAhead) into the decoder
//   file, seekable  raw                     RawFileSource: data extents read
//                                           ahead, holes (SEEK_HOLE) as zero FILL
//   "-", fifo       sparse or raw           StreamSource over a ByteReader
//   any             gzip/xz/zstd/bzip2/lz4  StreamSource over a DecompressReader
//                                           (its own thread); content detected
//                                           again after decompression
//   "a,b,..."       sparse parts            PartsSource: each part in order,
//                                           later parts overlaying earlier ones
//   with --bmap     raw (any of the above)  BmapSource: mapped ranges only,
//                                           each checksummed
//   http(s)://...   any of the above        the same sources over the URL's
//                                           cache entry while it is fetched
//                                           (remote_image.h)
// A raw stream's all-zero runs (>= 64 KiB, 4 KiB aligned) become zero FILL,
// which the writer turns into zeroout or holes (they read back as zeros).
//
// OpenImage checks what can be checked before a byte is written: an empty
// image (a 0-byte file, an empty stdin, a stream that decompresses to
// nothing) is refused, a sparse header (file, stream or inside a compressed
// stream) is decoded, and the expanded size is taken from the sparse header,
// the file size, the bmap or the compressed container (compressed_size.h).
// inputs() names every file the image is read from, by device and inode,
// so that the caller can refuse to write over one of them.
// Run() is called once. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/file_id.h"
#include "base/status.h"
#include "fetch/remote_file.h"
#include "fetch/signature.h"
#include "input/detect.h"
#include "input/image_sink.h"
#include "sparse/decoder.h"

namespace flashpipe::input {

// What an image is made of; decisions go by these fields, Name() is for
// display and --json.
struct ImageForm {
  ImageKind compression = ImageKind::kRaw;  // kGzip ... kLz4, or kRaw: none
  bool sparse = false;                      // the (decompressed) content
  bool bmap = false;                        // written through a bmap
  size_t parts = 0;                         // > 0: that many sparse parts
  // "sparse", "raw", "gzip+sparse", "parts(2)+sparse", "raw+bmap", ...
  std::string Name() const;
};

// A file the image is read from, and what it is to the image ("the image
// itself", "part 2 of the image (b.simg)", "the bmap file x.bmap").
struct InputFile {
  std::string role;
  FileId id;
};

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  virtual ImageForm form() const = 0;
  std::string kind() const { return form().Name(); }
  // Size of the expanded image when known before Run (sparse header, file
  // size, bmap ImageSize, xz index, zstd frame headers).
  virtual std::optional<uint64_t> known_size() const = 0;
  // The expanded image has at least this many bytes (a compressed stream's
  // hint, compressed_size.h); known_size() when that is known.
  virtual uint64_t min_size() const { return known_size().value_or(0); }
  virtual Status Run(ImageSink* sink) = 0;
  // After Run: the size of the image that was delivered.
  virtual uint64_t image_size() const = 0;

  const std::vector<InputFile>& inputs() const { return inputs_; }
  void AddInput(InputFile input) { inputs_.push_back(std::move(input)); }

  // An image from a URL: what its fetch did so far (all of it after Run).
  virtual std::optional<fetch::FetchReport> download() const { return std::nullopt; }
  // The block map OpenImage used when it found or fetched it itself (a
  // URL's), and who signed it.
  struct Provenance {
    std::string bmap;         // a path or URL, "" for none
    bool bmap_found = false;  // found beside the image, not given
    std::string signed_by;    // the fingerprint of its good signature, "" none
  };
  const Provenance& provenance() const { return provenance_; }
  void SetProvenance(Provenance p) { provenance_ = std::move(p); }

 private:
  std::vector<InputFile> inputs_;
  Provenance provenance_;
};

struct SourceOptions {
  sparse::DecoderOptions decoder;
  std::string bmap_path;          // raw image + bmap
  // bmap_path was found beside the image, not given (find_bmap.h): it must
  // have the image's size, and a sparse image goes without it.
  bool bmap_found = false;
  bool detect_zeros = true;       // raw streams: zero runs -> zero FILL
  size_t read_size = 1 << 20;     // stream read granularity
  // A seekable sparse file's RAW payloads go to the sink as file ranges
  // (RawFromFd) rather than as slices of pieces read ahead: for a sink that
  // reads them into memory of its own or does not read them at all (the
  // host's window and its planning pass), which saves a copy or a reading.
  bool raw_by_range = false;
  // http(s) images (remote_image.h): the client, the cache, the expected
  // SHA-256 of the file (also checked for a local file); look for a bmap
  // beside the URL when bmap_path is empty.
  fetch::FetchOptions fetch;
  bool find_bmap = false;
  // bmap signatures, local or fetched.
  fetch::SignaturePolicy signature;
};

// `spec`: a path, "-" for stdin, comma-separated sparse parts, or an
// http(s) URL.
Result<std::unique_ptr<ImageSource>> OpenImage(const std::string& spec, const SourceOptions& options);

// Refuses an image path that is, after following its links, a character
// device, a fifo or a socket ("/dev/zero is a character device, not an image;
// use - for a stream"): such a file may never end (/dev/zero, /dev/urandom)
// and has no size to check against a target; "-" (stdin) is the one way to
// write a stream. Nothing is opened, so a device with side effects on open
// (a tty, a watchdog) is left alone. OpenImage checks every local path with
// it; callers that read an image some other way (the host's planner) call it
// before they touch a target. Ok for "-", a URL, or a path that does not
// exist (its open then says so).
Status CheckImagePathType(const std::string& path);

// A spec with a comma that names no file: a list of sparse parts.
bool IsPartsSpec(const std::string& spec);

// The files OpenImage(spec, options) reads (what inputs() will list), found
// by stat alone: for a check that must come before the image is opened.
// Files that cannot be stat'ed are left out (opening them will fail).
std::vector<InputFile> ImageFiles(const std::string& spec, const SourceOptions& options);

// Emits `data` (image bytes at `offset`) as OnRaw, with 4 KiB-aligned zero
// runs of at least `min_zero_run` bytes as OnFill(.., 0).
Status EmitRawDetectingZeros(ImageSink* sink, uint64_t offset, std::span<const uint8_t> data,
                             uint64_t min_zero_run = 64 << 10);

}  // namespace flashpipe::input
