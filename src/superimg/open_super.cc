#include "superimg/open_super.h"

#include <fcntl.h>

#include "base/fd_io.h"
#include "lp/reader.h"
#include "sparse/format.h"
#include "superimg/sparse_block_io.h"

namespace flashpipe::superimg {

const char* KindName(SuperFile::Kind kind) {
  switch (kind) {
    case SuperFile::Kind::kSparse: return "sparse";
    case SuperFile::Kind::kEmpty: return "super_empty";
    default: return "raw";
  }
}

Result<SuperFile> OpenSuper(const std::string& path) {
  SuperFile f;
  f.path = path;
  f.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.fd.valid()) return ErrnoError(fmt::format("open {}", path));
  FP_ASSIGN_OR_RETURN(f.id, FileIdOfFd(f.fd.get(), path));
  FP_ASSIGN_OR_RETURN(lp::FdBlockIo whole, lp::FdBlockIo::Whole(f.fd.get(), path, false));
  uint8_t head[sparse::kFileHeaderSize] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof head, whole.size()));
  FP_RETURN_IF_ERROR(whole.Read(0, std::span(head, n)));
  if (sparse::HasSparseMagic(std::span(head, n))) {
    f.kind = SuperFile::Kind::kSparse;
    FP_ASSIGN_OR_RETURN(f.io, SparseBlockIo::Open(f.fd.get(), path));
    return f;
  }
  f.kind = lp::HasEmptyImageMagic(std::span(head, n)) ? SuperFile::Kind::kEmpty : SuperFile::Kind::kRaw;
  f.io = std::make_unique<lp::FdBlockIo>(std::move(whole));
  return f;
}

Result<lp::Metadata> ReadSuperMetadata(SuperFile& super, uint32_t slot) {
  Result<lp::Metadata> m = Internal("unread");
  if (super.kind == SuperFile::Kind::kEmpty) {
    if (slot != 0) {
      return InvalidArgument(fmt::format("{} is a super_empty.img: it holds one metadata copy, not slot {}",
                                         super.path, slot));
    }
    m = lp::ReadEmptyImage(*super.io);
  } else {
    m = lp::ReadMetadata(*super.io, slot);
  }
  if (!m.ok()) return m.status().WithContext(super.path);
  return m;
}

}  // namespace flashpipe::superimg
