// The ImageSource implementations behind OpenImage (image_source.h), exposed
// for OpenImage and the tests. Each takes what OpenImage already found out.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "input/bmap.h"
#include "input/byte_reader.h"
#include "input/compressed_size.h"
#include "input/image_source.h"
#include "sparse/read_ahead.h"

namespace flashpipe::input {

// How the sparse and raw file sources read ahead of the writer: 3 requests
// of 2 MiB in flight (O_DIRECT unless cached), 10 MiB in all. On a cold
// 1.5 GiB super-like image this beat the converters' 4 MiB x 6 (24 MiB) and
// POSIX_FADV_WILLNEED hints ahead of plain preads (bench/write_floor_bench.sh).
inline sparse::ReadAheadOptions FileReadAhead() {
  return {.buffer_size = size_t{2} << 20, .buffers = 5, .threads = 3, .direct = true};
}

// A seekable sparse file of `file_size` bytes; `raw_by_range`: see
// SourceOptions.
std::unique_ptr<ImageSource> MakeSparseFileSource(UniqueFd fd, std::string name, uint64_t file_size,
                                                  sparse::DecoderOptions options, bool raw_by_range = false);
// A seekable raw file (or block device) of `size` bytes.
std::unique_ptr<ImageSource> MakeRawFileSource(UniqueFd fd, std::string name, uint64_t size);
// A sequential stream of sparse or raw content, decompressed from
// `compression` (kRaw: not compressed), of the expanded size `size` says.
std::unique_ptr<ImageSource> MakeStreamSource(std::unique_ptr<PeekReader> reader, ImageKind compression,
                                              bool sparse, const SourceOptions& options, SizeHint size);
// A raw stream (any reader) written through a bmap.
std::unique_ptr<ImageSource> MakeBmapSource(std::unique_ptr<ByteReader> reader, Bmap bmap,
                                            ImageKind compression);
// A seekable raw file written through a bmap (zero-copy, hashed alongside).
// `wait` (optional) is called with each range's [begin, end) before it is
// read: a file still being fetched (remote_image.h).
// REQUIRES: the file holds at least bmap.image_size bytes.
using RangeWait = std::function<Status(uint64_t begin, uint64_t end)>;
std::unique_ptr<ImageSource> MakeBmapFileSource(UniqueFd fd, std::string name, Bmap bmap, RangeWait wait = {});
// The checksum of the bmap's first mapped range, read from `fd` before
// anything is written, when the range is at most 64 MiB (a partition table
// and boot area, typically): a bmap of another build of the image, of the
// same size, is then refused before any target changes rather than after
// its first range was written.
Status CheckFirstBmapRange(int fd, const std::string& name, const Bmap& bmap);

// OpenImage's steps for what is not a path (a URL's cache entry): a seekable
// file of `size` bytes, or a stream; `bmap` may be null.
Result<std::unique_ptr<ImageSource>> OpenSeekableFd(UniqueFd fd, const std::string& name, uint64_t size,
                                                    const SourceOptions& options, const Bmap* bmap);
Result<std::unique_ptr<ImageSource>> OpenStreamReader(std::unique_ptr<ByteReader> reader, const SourceOptions& options,
                                                      const Bmap* bmap);

}  // namespace flashpipe::input
