// append2simg: appends a raw file to a sparse image, as AOSP append2simg does.
// The raw file's size must be a multiple of the image's blk_sz; its blocks
// follow the image's last block as RAW chunks (at most 64 MiB each). Both
// must be regular files and not the same file. The image is validated first,
// rebuilt through an AtomicFile (a temporary file beside it, its chunks
// copied as they are, larger headers included), and renamed over it only
// when complete: a symlinked image is written through, its mode kept. An existing image without the sparse magic is taken as raw and
// becomes a sparse image of 4096-byte blocks first (its size must be a
// multiple of 4096), as AOSP append2simg does.
#pragma once

#include <string>

#include "base/status.h"

namespace flashpipe::sparse {

Status AppendToSparse(const std::string& sparse_path, const std::string& raw_path);

}  // namespace flashpipe::sparse
