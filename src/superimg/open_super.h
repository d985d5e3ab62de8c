// OpenSuper: a super image file (or block device) as the lp library reads
// it, whatever its form, told apart by its first bytes:
//   raw     the bytes are the super partition (FdBlockIo)
//   sparse  an Android sparse image of one, read at random (SparseBlockIo)
//   empty   a super_empty.img: geometry at byte 0, one metadata copy
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/file_id.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "lp/block_io.h"
#include "lp/metadata.h"

namespace flashpipe::superimg {

struct SuperFile {
  enum class Kind { kRaw, kSparse, kEmpty };
  Kind kind = Kind::kRaw;
  std::string path;
  UniqueFd fd;
  FileId id;
  std::unique_ptr<lp::BlockIo> io;
};

const char* KindName(SuperFile::Kind kind);  // "raw", "sparse", "super_empty"

Result<SuperFile> OpenSuper(const std::string& path);
// The metadata of `slot` (a super_empty.img has one copy: slot must be 0).
Result<lp::Metadata> ReadSuperMetadata(SuperFile& super, uint32_t slot);

}  // namespace flashpipe::superimg
