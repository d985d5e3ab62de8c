#include "fetch/http_parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace flashpipe::fetch {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A decimal number of at most 18 digits (below 2^63).
std::optional<uint64_t> Number(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// For messages: what the server sent, cut and without control bytes.
std::string Shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return s.size() > 80 ? out + "..." : out;
}

Status BadHeader(std::string_view name, std::string_view value, std::string_view why) {
  return Corrupt(fmt::format("{} '{}': {}", name, Shown(value), why));
}

}  // namespace

Result<ContentRange> ParseContentRange(std::string_view value) {
  std::string_view v = Trim(value);
  if (v.size() < 6 || !IEquals(v.substr(0, 6), "bytes ")) return BadHeader("Content-Range", value, "not in bytes");
  v = Trim(v.substr(6));
  size_t slash = v.find('/');
  if (slash == std::string_view::npos) return BadHeader("Content-Range", value, "no '/'");
  ContentRange cr;
  std::string_view total = v.substr(slash + 1), span = v.substr(0, slash);
  if (total != "*") {
    cr.total = Number(total);
    if (!cr.total) return BadHeader("Content-Range", value, "bad total length");
  }
  if (span == "*") {
    if (!cr.total) return BadHeader("Content-Range", value, "neither range nor length");
    return cr;
  }
  size_t dash = span.find('-');
  if (dash == std::string_view::npos) return BadHeader("Content-Range", value, "no '-'");
  auto first = Number(span.substr(0, dash)), last = Number(span.substr(dash + 1));
  if (!first || !last) return BadHeader("Content-Range", value, "bad numbers");
  if (*last < *first) return BadHeader("Content-Range", value, "end before start");
  if (cr.total && *last >= *cr.total) return BadHeader("Content-Range", value, "past the total length");
  cr.span = ByteSpan{*first, *last + 1};
  return cr;
}

Status ParseHeaderLine(std::string_view line, ResponseHead* head) {
  if (line.size() > kMaxHeaderLine) return Corrupt(fmt::format("a response header line of {} bytes", line.size()));
  std::string_view l = Trim(line);
  if (l.empty()) return Status::Ok();
  if (l.starts_with("HTTP/")) {
    size_t sp = l.find(' ');
    std::optional<uint64_t> code = sp == std::string_view::npos ? std::nullopt : Number(l.substr(sp + 1, 3));
    if (!code || *code < 100 || *code > 999) return BadHeader("status line", l, "no status code");
    *head = ResponseHead();
    head->status = static_cast<int>(*code);
    return Status::Ok();
  }
  size_t colon = l.find(':');
  if (colon == std::string_view::npos || colon == 0) return BadHeader("header", l, "no name");
  std::string name = Lower(Trim(l.substr(0, colon)));
  std::string_view value = Trim(l.substr(colon + 1));
  if (name == "content-length") {
    head->content_length = Number(value);
    if (!head->content_length) return BadHeader("Content-Length", value, "not a number");
  } else if (name == "content-range") {
    FP_ASSIGN_OR_RETURN(head->content_range, ParseContentRange(value));
  } else if (name == "etag") {
    head->etag = std::string(value);
  } else if (name == "last-modified") {
    head->last_modified = std::string(value);
  } else if (name == "content-type") {
    head->content_type = std::string(value);
  } else if (name == "content-encoding") {
    head->content_encoding = Lower(value);
  } else if (name == "accept-ranges") {
    std::string v = Lower(value);
    head->accept_ranges_bytes = v.find("bytes") != std::string::npos;
    head->accept_ranges_none = v == "none";
  } else if (name == "location") {
    head->location = std::string(value);
  }
  return Status::Ok();
}

Result<std::optional<std::string>> MultipartBoundary(std::string_view content_type) {
  std::string_view v = Trim(content_type);
  size_t semi = v.find(';');
  if (!IEquals(Trim(v.substr(0, semi)), "multipart/byteranges")) return std::optional<std::string>();
  while (semi != std::string_view::npos) {
    v = v.substr(semi + 1);
    semi = v.find(';');
    std::string_view param = Trim(v.substr(0, semi));
    size_t eq = param.find('=');
    if (eq == std::string_view::npos || !IEquals(Trim(param.substr(0, eq)), "boundary")) continue;
    std::string_view b = Trim(param.substr(eq + 1));
    if (b.size() >= 2 && b.front() == '"' && b.back() == '"') b = b.substr(1, b.size() - 2);
    if (b.empty() || b.size() > 70) return BadHeader("Content-Type", content_type, "bad boundary length");
    return std::optional<std::string>(std::string(b));
  }
  return BadHeader("Content-Type", content_type, "multipart/byteranges without a boundary");
}

std::string RangeHeaderValue(std::span<const ByteSpan> spans) {
  std::string out = "bytes=";
  for (size_t i = 0; i < spans.size(); ++i) {
    out += fmt::format("{}{}-{}", i == 0 ? "" : ",", spans[i].begin, spans[i].end - 1);
  }
  return out;
}

MultipartParser::MultipartParser(std::string boundary, OnData on_data)
    : boundary_("--" + std::move(boundary)), on_data_(std::move(on_data)) {}

bool MultipartParser::Gather(std::span<const uint8_t>& data, size_t n) {
  size_t take = std::min(data.size(), n - std::min(n, pending_.size()));
  pending_.append(reinterpret_cast<const char*>(data.data()), take);
  data = data.subspan(take);
  return pending_.size() >= n;
}

Status MultipartParser::StartPart(std::string_view block) {
  std::optional<ContentRange> range;
  size_t start = 0;
  while (start < block.size()) {
    size_t end = block.find("\r\n", start);
    if (end == std::string_view::npos) end = block.size();
    std::string_view line = block.substr(start, end - start);
    start = end + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (IEquals(Trim(line.substr(0, colon)), "content-range")) {
      FP_ASSIGN_OR_RETURN(range, ParseContentRange(line.substr(colon + 1)));
    }
  }
  if (!range || !range->span) return Corrupt(fmt::format("multipart part {}: no Content-Range", parts_ + 1));
  part_at_ = range->span->begin;
  part_end_ = range->span->end;
  ++parts_;
  return Status::Ok();
}

// One state's worth of `data`; leaves the rest in `data`.
Status MultipartParser::Step(std::span<const uint8_t>& data) {
  switch (state_) {
    case State::kPreamble: {
      // Usually nothing or a CRLF comes before the first boundary.
      Gather(data, kMaxPartHeader);
      size_t at = pending_.find(boundary_);
      if (at == std::string::npos) {
        if (pending_.size() >= kMaxPartHeader) return Corrupt("multipart body: no boundary in its first 8 KiB");
        return Status::Ok();
      }
      std::string rest = pending_.substr(at + boundary_.size());
      pending_.clear();
      state_ = State::kAfterBoundary;
      std::span<const uint8_t> r(reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
      while (!r.empty()) FP_RETURN_IF_ERROR(Step(r));
      return Status::Ok();
    }
    case State::kAfterBoundary:
      if (!Gather(data, 2)) return Status::Ok();
      if (pending_ == "--") {
        state_ = State::kDone;
      } else if (pending_ == "\r\n") {
        state_ = State::kPartHeader;
      } else {
        return Corrupt(fmt::format("multipart body: '{}' after boundary {}", Shown(pending_), parts_ + 1));
      }
      pending_.clear();
      return Status::Ok();
    case State::kPartHeader: {
      while (!data.empty() && pending_.find("\r\n\r\n") == std::string::npos) {
        if (pending_.size() >= kMaxPartHeader) return Corrupt(fmt::format("multipart part {}: header over 8 KiB", parts_ + 1));
        pending_ += static_cast<char>(data.front());
        data = data.subspan(1);
      }
      size_t end = pending_.find("\r\n\r\n");
      if (end == std::string::npos) return Status::Ok();
      FP_RETURN_IF_ERROR(StartPart(std::string_view(pending_).substr(0, end)));
      pending_.clear();
      state_ = State::kBody;
      return Status::Ok();
    }
    case State::kBody: {
      size_t n = static_cast<size_t>(std::min<uint64_t>(data.size(), part_end_ - part_at_));
      if (n > 0) FP_RETURN_IF_ERROR(on_data_(part_at_, data.first(n)));
      part_at_ += n;
      data = data.subspan(n);
      if (part_at_ == part_end_) state_ = State::kDelimiter;
      return Status::Ok();
    }
    case State::kDelimiter: {
      std::string want = "\r\n" + boundary_;
      if (!Gather(data, want.size())) return Status::Ok();
      if (pending_ != want) {
        return Corrupt(fmt::format("multipart part {}: its body is not followed by the boundary", parts_));
      }
      pending_.clear();
      state_ = State::kAfterBoundary;
      return Status::Ok();
    }
    case State::kDone:
      data = {};  // the epilogue is ignored
      return Status::Ok();
  }
  return Internal("multipart state");
}

Status MultipartParser::Feed(std::span<const uint8_t> data) {
  while (!data.empty()) FP_RETURN_IF_ERROR(Step(data));
  return Status::Ok();
}

Status MultipartParser::Finish() const {
  if (state_ == State::kDone) return Status::Ok();
  return Corrupt(fmt::format("multipart body ended inside part {} (no closing boundary)", parts_ + (state_ == State::kBody)));
}

}  // namespace flashpipe::fetch
