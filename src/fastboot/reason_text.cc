#include "fastboot/reason_text.h"

namespace flashpipe::fastboot {
namespace {

constexpr std::string_view kMore = "...";

}  // namespace

std::vector<std::string> WrapWords(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  auto flush = [&] {
    if (!line.empty()) lines.push_back(std::move(line));
    line.clear();
  };
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = text.find(' ', i);
    std::string_view word = text.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    i += word.size();
    if (!line.empty() && line.size() + 1 + word.size() <= width) {
      line += ' ';
      line += word;
      continue;
    }
    flush();
    while (word.size() > width) {  // nowhere to break it: cut
      lines.emplace_back(word.substr(0, width));
      word.remove_prefix(width);
    }
    line = std::string(word);
  }
  flush();
  return lines;
}

std::string ShortReason(std::string_view reason, size_t width) {
  if (reason.size() <= width) return std::string(reason);
  // Whole leading parts: the longest run that fits.
  size_t cut = 0;
  for (size_t at = reason.find(": "); at != std::string_view::npos && at <= width; at = reason.find(": ", at + 1)) {
    cut = at;
  }
  // Whole parts, unless they say too little ("create-logical-partition"
  // alone hides why): then as many whole words as fit, then "...".
  if (cut > width / 2) return std::string(reason.substr(0, cut));
  size_t end = reason.rfind(' ', width - kMore.size());
  if (end == std::string_view::npos || end == 0) end = width - kMore.size();  // one word: nowhere else to cut
  std::string out(reason.substr(0, end));
  while (!out.empty() && (out.back() == ' ' || out.back() == ':' || out.back() == ',')) out.pop_back();
  return out + std::string(kMore);
}

}  // namespace flashpipe::fastboot
