// FindBmap: the block map `flashpipe write IMAGE` uses without --bmap, found
// beside the image the way bmaptool copy finds one: IMAGE.bmap, then the
// same with IMAGE's last extension removed, one at a time, until none is
// left. For foo.img.xz: foo.img.xz.bmap, foo.img.bmap, foo.bmap. An
// extension is the part of the file name from its last dot on, when
// something other than dots comes before that dot (".img" has none). Only
// a regular file that is not the image itself counts. Not for stdin or
// sparse parts: the caller does not ask then.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace flashpipe::input {

// The names tried for `image`, in order (pure, for tests).
std::vector<std::string> BmapCandidates(const std::string& image);

// The first candidate that is a regular file other than the image.
std::optional<std::string> FindBmap(const std::string& image);

}  // namespace flashpipe::input
