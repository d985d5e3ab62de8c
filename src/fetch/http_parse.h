// What flashpipe reads from an HTTP server, parsed without any I/O, so the
// fuzzer and the tests feed it any bytes: response header lines (status,
// Content-Length, Content-Range, ETag, Last-Modified, Content-Type and its
// multipart boundary, Content-Encoding, Accept-Ranges), Range header
// values, and a push parser for multipart/byteranges bodies (RFC 9110
// 14.6, the answer to a request for several ranges).
//
// Everything is bounded: a header line longer than kMaxHeaderLine, a part
// header block longer than kMaxPartHeader, or a number past 2^63 is an
// error, never an allocation that grows with the input. Errors are
// kCorrupt with what was wrong ("Content-Range 'bytes 5-2/9': end before
// start"). Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::fetch {

inline constexpr size_t kMaxHeaderLine = 16 << 10;
inline constexpr size_t kMaxPartHeader = 8 << 10;

// [begin, end) of the file at the URL.
struct ByteSpan {
  uint64_t begin = 0, end = 0;
  uint64_t size() const { return end - begin; }
  bool operator==(const ByteSpan&) const = default;
};

// "bytes FIRST-LAST/TOTAL"; "bytes */TOTAL" (a 416's) leaves span unset.
struct ContentRange {
  std::optional<ByteSpan> span;
  std::optional<uint64_t> total;  // "*": unknown
};
Result<ContentRange> ParseContentRange(std::string_view value);

// The head of one response. A redirect's head is replaced by the next one's:
// ParseHeaderLine resets it on every status line.
struct ResponseHead {
  int status = 0;
  std::optional<uint64_t> content_length;
  std::optional<ContentRange> content_range;
  std::string etag;           // as sent, quotes included; "" when absent
  std::string last_modified;  // as sent
  std::string content_type;
  std::string content_encoding;
  bool accept_ranges_bytes = false;
  bool accept_ranges_none = false;
  std::string location;

  // A strong ETag ("W/" ones cannot validate a byte range, RFC 9110 8.8.3).
  bool strong_etag() const { return !etag.empty() && !etag.starts_with("W/"); }
  // The validator a Range request is tied to: the strong ETag, else
  // Last-Modified, else "".
  std::string validator() const { return strong_etag() ? etag : last_modified; }
};

// One line as libcurl hands it to a header callback (CRLF included or not).
// A status line ("HTTP/1.1 206 Partial Content") starts a new head; the
// empty line ending a head is accepted and changes nothing.
Status ParseHeaderLine(std::string_view line, ResponseHead* head);

// The boundary of "multipart/byteranges; boundary=XYZ" (quoted or not),
// nullopt for any other type.
Result<std::optional<std::string>> MultipartBoundary(std::string_view content_type);

// "bytes=0-99,200-299" for spans (non-empty, each end > begin).
std::string RangeHeaderValue(std::span<const ByteSpan> spans);

// A multipart/byteranges body, fed in any slicing. Each part's bytes reach
// `on_data` with their file offset (from the part's Content-Range), so a
// caller writes them where they belong whatever order the server chose.
class MultipartParser {
 public:
  using OnData = std::function<Status(uint64_t offset, std::span<const uint8_t> data)>;
  MultipartParser(std::string boundary, OnData on_data);

  Status Feed(std::span<const uint8_t> data);
  // The body ended: it must have ended with the closing boundary.
  Status Finish() const;
  size_t parts() const { return parts_; }

 private:
  // Each part's length comes from its Content-Range, so a body is taken by
  // count, never searched for the boundary, and must be followed by it.
  enum class State { kPreamble, kAfterBoundary, kPartHeader, kBody, kDelimiter, kDone };
  Status Step(std::span<const uint8_t>& data);
  Status StartPart(std::string_view header_block);
  // Moves bytes into pending_ until it holds `n`; false: need more input.
  bool Gather(std::span<const uint8_t>& data, size_t n);

  std::string boundary_;   // "--" + boundary
  OnData on_data_;
  State state_ = State::kPreamble;
  std::string pending_;    // bytes held back: a boundary, a header block
  uint64_t part_at_ = 0, part_end_ = 0;  // the current part's file offsets
  size_t parts_ = 0;
};

}  // namespace flashpipe::fetch
