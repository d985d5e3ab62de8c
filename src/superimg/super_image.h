// WriteSuperImage: a super image file (what `lp make` writes when given
// partition images): the metadata area (reserved zeros, both geometry
// copies, every slot's primary and backup copy, each padded with zeros to
// metadata_max_size) followed by each partition image at its extents.
//
// One pass, in device order: the partition images (raw, sparse or
// compressed, anything input::OpenImage reads) are streamed through their
// extents (ExtentSink) into
//   raw output     a file of the super's size; zeros are holes
//   sparse output  an EncodingSink: zero and uniform blocks become FILL,
//                  space no image covers DONT_CARE
// so no image is expanded in memory or on disk. Everything that can be
// checked is checked before the output is created: one block device,
// extents of imaged partitions LINEAR and on block boundaries and in device
// order, image sizes (when the image says it) within their partition, no
// image given twice or named the output. The output is written through
// AtomicFile: whole or not at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "input/image_source.h"
#include "lp/metadata.h"

namespace flashpipe::superimg {

struct PartitionImage {
  std::string partition;
  std::string path;
};

struct SuperImageOptions {
  bool sparse = false;
  uint32_t block_size = 4096;  // sparse block size; extents must be multiples
};

Status WriteSuperImage(const lp::Metadata& m, const std::vector<PartitionImage>& images,
                       const std::string& out_path, const SuperImageOptions& options);

// The expanded size an image file will have (sparse header, file size), for
// `lp make` partitions whose size is taken from their image.
Result<uint64_t> ImageSize(const std::string& path);

}  // namespace flashpipe::superimg
