// Unpack: each logical partition of a super written out as DIR/NAME.img,
// as lpunpack does: its extents in partition order, read from the super
// (raw, sparse or a block device: any lp::BlockIo), ZERO extents and
// all-zero blocks left as holes; the file is exactly the partition's size.
//
// Names are checked first (each exists, is a safe file name, is not the
// super itself); every file is built in a temporary file and all of them
// are renamed into place only once all are complete, so an error leaves no
// partial image behind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/file_id.h"
#include "base/status.h"
#include "lp/block_io.h"
#include "lp/metadata.h"

namespace flashpipe::superimg {

struct UnpackOptions {
  std::vector<std::string> partitions;  // empty: all
  std::optional<FileId> super_id;       // refuse to write over the super
};

// Returns the paths written, in metadata order.
Result<std::vector<std::string>> Unpack(lp::BlockIo& super, const lp::Metadata& m, const std::string& dir,
                                        const UnpackOptions& options);

}  // namespace flashpipe::superimg
