#include "fetch/http_parse.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "fetch/sha256sums.h"
#include "fetch/span_set.h"
#include "fetch/url.h"

namespace flashpipe::fetch {
namespace {

TEST(ContentRange, ParsesSpanAndTotal) {
  auto cr = ParseContentRange("bytes 100-199/1000");
  ASSERT_TRUE(cr.ok()) << cr.status().ToString();
  EXPECT_EQ(cr->span, (ByteSpan{100, 200}));
  EXPECT_EQ(cr->total, 1000u);
  auto star = ParseContentRange("bytes */42");
  ASSERT_TRUE(star.ok());
  EXPECT_FALSE(star->span);
  EXPECT_EQ(star->total, 42u);
  auto unknown = ParseContentRange("bytes 0-9/*");
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->total);
}

TEST(ContentRange, RefusesWhatDoesNotAddUp) {
  EXPECT_EQ(ParseContentRange("bytes 5-2/9").status().message(), "Content-Range 'bytes 5-2/9': end before start");
  EXPECT_EQ(ParseContentRange("bytes 0-9/9").status().message(), "Content-Range 'bytes 0-9/9': past the total length");
  EXPECT_FALSE(ParseContentRange("items 0-1/2").ok());
  EXPECT_FALSE(ParseContentRange("bytes 0-99999999999999999999/1").ok());
  EXPECT_FALSE(ParseContentRange("bytes */*").ok());
  EXPECT_FALSE(ParseContentRange("bytes -1-2/3").ok());
}

TEST(HeaderLine, StatusLineStartsANewHead) {
  ResponseHead h;
  ASSERT_TRUE(ParseHeaderLine("HTTP/1.1 302 Found\r\n", &h).ok());
  ASSERT_TRUE(ParseHeaderLine("Location: /b\r\n", &h).ok());
  ASSERT_TRUE(ParseHeaderLine("ETag: \"old\"\r\n", &h).ok());
  ASSERT_TRUE(ParseHeaderLine("HTTP/1.1 206 Partial Content\r\n", &h).ok());
  ASSERT_TRUE(ParseHeaderLine("content-range: bytes 0-0/10\r\n", &h).ok());
  ASSERT_TRUE(ParseHeaderLine("ETag: \"abc\"\r\n", &h).ok());
  ASSERT_TRUE(ParseHeaderLine("Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\n", &h).ok());
  ASSERT_TRUE(ParseHeaderLine("\r\n", &h).ok());
  EXPECT_EQ(h.status, 206);
  EXPECT_EQ(h.etag, "\"abc\"");
  EXPECT_TRUE(h.location.empty());
  EXPECT_EQ(h.validator(), "\"abc\"");
  ResponseHead weak;
  ASSERT_TRUE(ParseHeaderLine("ETag: W/\"x\"", &weak).ok());
  ASSERT_TRUE(ParseHeaderLine("Last-Modified: yesterday", &weak).ok());
  EXPECT_EQ(weak.validator(), "yesterday");  // a weak ETag cannot tie a range
}

TEST(HeaderLine, RefusesBadNumbersAndHugeLines) {
  ResponseHead h;
  EXPECT_FALSE(ParseHeaderLine("Content-Length: 12x", &h).ok());
  EXPECT_FALSE(ParseHeaderLine("HTTP/1.1 abc", &h).ok());
  EXPECT_FALSE(ParseHeaderLine(std::string(kMaxHeaderLine + 1, 'a'), &h).ok());
  EXPECT_FALSE(ParseHeaderLine("no colon here", &h).ok());
}

TEST(Multipart, Boundary) {
  EXPECT_EQ(MultipartBoundary("multipart/byteranges; boundary=00000000001")->value_or(""), "00000000001");
  EXPECT_EQ(MultipartBoundary("Multipart/ByteRanges; boundary=\"a b\"")->value_or(""), "a b");
  EXPECT_FALSE(MultipartBoundary("application/octet-stream")->has_value());
  EXPECT_FALSE(MultipartBoundary("multipart/byteranges").ok());
}

std::string Body(const std::string& b, const std::vector<std::pair<uint64_t, std::string>>& parts, uint64_t total) {
  std::string out = "\r\n";
  for (const auto& [at, data] : parts) {
    out += fmt::format("--{}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes {}-{}/{}\r\n\r\n", b, at,
                       at + data.size() - 1, total);
    out += data + "\r\n";
  }
  return out + "--" + b + "--\r\n";
}

// Every slicing of a body gives the same bytes at the same offsets.
TEST(Multipart, AnySlicingGivesTheParts) {
  std::string data1(300, 'x'), data2 = "\r\n--B not a boundary\r\n";
  std::string body = Body("B", {{10, data1}, {5000, data2}}, 10000);
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::map<uint64_t, std::string> got;
    MultipartParser p("B", [&](uint64_t off, std::span<const uint8_t> d) {
      got[off] = std::string(d.begin(), d.end());
      return Status::Ok();
    });
    for (size_t at = 0; at < body.size();) {
      size_t n = std::min<size_t>(body.size() - at, 1 + rng() % 40);
      ASSERT_TRUE(p.Feed({reinterpret_cast<const uint8_t*>(body.data() + at), n}).ok());
      at += n;
    }
    ASSERT_TRUE(p.Finish().ok());
    EXPECT_EQ(p.parts(), 2u);
    std::string first, second;
    for (const auto& [off, d] : got) (off < 5000 ? first : second) += d;
    EXPECT_EQ(first, data1);
    EXPECT_EQ(second, data2);
  }
}

TEST(Multipart, RefusesBrokenBodies) {
  auto run = [](const std::string& body) {
    MultipartParser p("B", [](uint64_t, std::span<const uint8_t>) { return Status::Ok(); });
    Status s = p.Feed({reinterpret_cast<const uint8_t*>(body.data()), body.size()});
    return s.ok() ? p.Finish() : s;
  };
  EXPECT_TRUE(run(Body("B", {{0, "abc"}}, 3)).ok());
  EXPECT_FALSE(run("--B\r\nContent-Type: x\r\n\r\nabc\r\n--B--").ok());         // no Content-Range
  EXPECT_FALSE(run("--B\r\nContent-Range: bytes 0-9/10\r\n\r\nabc\r\n--B--").ok());  // body shorter than its range
  EXPECT_FALSE(run("--B\r\nContent-Range: bytes 0-2/10\r\n\r\nabc").ok());       // no closing boundary
  EXPECT_FALSE(run(std::string(9000, 'p')).ok());                                // no boundary at all
  EXPECT_FALSE(run("--B\r\n" + std::string(9000, 'h')).ok());                    // endless part header
}

TEST(RangeHeader, ListsSpans) {
  std::vector<ByteSpan> spans{{0, 100}, {200, 201}};
  EXPECT_EQ(RangeHeaderValue(spans), "bytes=0-99,200-200");
}

TEST(SpanSet, MergesAndFindsWhatIsMissing) {
  SpanSet s;
  s.Add({10, 20});
  s.Add({30, 40});
  s.Add({20, 25});
  EXPECT_EQ(s.bytes(), 25u);
  EXPECT_EQ(s.ContiguousEnd(12), 25u);
  EXPECT_EQ(s.ContiguousEnd(27), 27u);
  EXPECT_TRUE(s.Contains({10, 25}));
  EXPECT_FALSE(s.Contains({10, 26}));
  auto missing = s.Missing({{0, 50}});
  ASSERT_EQ(missing.size(), 3u);
  EXPECT_EQ(missing[0], (ByteSpan{0, 10}));
  EXPECT_EQ(missing[1], (ByteSpan{25, 30}));
  EXPECT_EQ(missing[2], (ByteSpan{40, 50}));
  EXPECT_EQ(s.Held({{0, 50}}), 25u);
  s.Add({0, 100});
  EXPECT_EQ(s.spans().size(), 1u);
  EXPECT_EQ(s.bytes(), 100u);
}

TEST(Url, DisplayAndNamesBeside) {
  EXPECT_TRUE(IsUrl("HTTPS://h/x"));
  EXPECT_FALSE(IsUrl("/tmp/http://x"));
  EXPECT_EQ(DisplayUrl("https://user:secret@h:1/a.img"), "https://h:1/a.img");
  EXPECT_EQ(UrlBasename("https://h/a/b.img.xz?token=1"), "b.img.xz");
  EXPECT_EQ(WithSuffix("https://h/a.img?t=1", ".bmap"), "https://h/a.img.bmap?t=1");
}

TEST(Sha256Sums, FindsTheImageLine) {
  std::string a(64, 'a'), b(64, 'B');
  std::string sums = a + "  other.img\n" + b + " *dir/disk.img.xz\nSHA256 (bsd.img) = " + a + "\n";
  EXPECT_EQ(*Sha256FromSums(sums, "disk.img.xz", "SUMS"), std::string(64, 'b'));
  EXPECT_EQ(*Sha256FromSums(sums, "bsd.img", "SUMS"), a);
  EXPECT_EQ(Sha256FromSums(sums, "missing.img", "SUMS").status().code(), Code::kNotFound);
  EXPECT_EQ(Sha256FromSums("abc  x.img\n", "x.img", "SUMS").status().code(), Code::kCorrupt);
  EXPECT_FALSE(NormalizeSha256("12").ok());
}

}  // namespace
}  // namespace flashpipe::fetch
