// One pass over an image: opened by input::OpenImage (raw, sparse,
// compressed, with a bmap, from a file or stdin), its events made into
// records (and payload) by a RecordSink.
//
// An image is planned ahead when it can be read twice: a regular file or
// block device. Its planning pass (PlanImage) reads the headers of a sparse
// file, or the data of a raw one (a compressed file: decompressed once
// more), and keeps the records, 32 bytes each, no payload: the whole image
// is checked and its parts, each as large as the device takes, are known
// before anything is sent. Any other image (stdin, a pipe) is planned as it
// is read, in parts no larger than half the host's window.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/file_id.h"
#include "base/status.h"
#include "host/record.h"
#include "host/record_sink.h"
#include "input/image_source.h"

namespace flashpipe::host {

struct ImageSpec {
  std::string path;  // "-" for stdin
  std::string bmap;  // a bmap file for a raw image, or empty
};

// Opens `spec` and delivers its records to `out` (its payload too when
// with_payload). `form` (optional) gets what the image turned out to be.
// `crc`: CRC32 chunks are checked (with payload); off for an image whose
// plan has none, so that its RAW bytes are not CRC'd for nothing.
Status RunImagePass(const ImageSpec& spec, bool with_payload, RecordOut* out, input::ImageForm* form = nullptr,
                    bool crc = true);

// Whether the image is a file that can be planned ahead and read again
// (for a device that fell behind, or a retry); stdin and pipes cannot.
bool Rereadable(const ImageSpec& spec);

// A stretch of the payload stream that is bytes of the image file.
struct FileExtent {
  uint64_t payload = 0, file = 0, size = 0;
};

// The file as it was planned: a file whose identity, size or time of change
// differ is not the image that was planned.
struct FileStamp {
  FileId id;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
Result<FileStamp> StampOfFd(int fd, const std::string& name);

struct ImagePlan {
  ImageShape shape;
  std::vector<Record> records;
  uint64_t payload_bytes = 0;
  input::ImageForm form;
  // A sparse file without CRC32 chunks, or a raw file whose size is a
  // multiple of the block size: where each payload byte lies in the file
  // (in payload order, covering it all), so that a device reads it from the
  // file itself (sent by the kernel, no copy in the window). Empty
  // otherwise.
  std::vector<FileExtent> payload_in_file;
  FileStamp stamp;
  bool crc_chunks = false;  // a sparse image with CRC32 chunks
};

// The planning pass. nullptr (and OK) for an image that is not planned
// ahead (stdin, pipes): nothing of it is read. A file that does not exist
// or cannot be read is an error here, before any device is touched.
Result<std::shared_ptr<const ImagePlan>> PlanImage(const ImageSpec& spec);

}  // namespace flashpipe::host
