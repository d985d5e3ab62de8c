#include "io/write_model.h"

#include <charconv>

#include "io/bounce_writer.h"
#include "io/discard_writer.h"

namespace flashpipe::io {
namespace {

constexpr std::string_view kBouncePrefix = "bounce:";

struct Named {
  std::string_view name;
  WriteModelKind kind;
};
constexpr Named kModels[] = {
    {"pipelined", WriteModelKind::kPipelined},
    {"bounce", WriteModelKind::kBounce},
    {"discard", WriteModelKind::kDiscard},
};

std::string_view KindName(WriteModelKind kind) {
  for (const auto& m : kModels) {
    if (m.kind == kind) return m.name;
  }
  return "?";
}

Result<WriteModel> ParseBounce(std::string_view text) {
  std::string_view digits = text.substr(kBouncePrefix.size());
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || n == 0 ||
      n > kMaxBounceBlocks) {
    return InvalidArgument(fmt::format("write model '{}': N of bounce:N must be a block count, 1..{}", text,
                                       kMaxBounceBlocks));
  }
  return WriteModel{WriteModelKind::kBounce, n};
}

}  // namespace

Result<WriteModel> ParseWriteModel(std::string_view text) {
  if (text.starts_with(kBouncePrefix)) return ParseBounce(text);
  for (const auto& m : kModels) {
    if (m.kind != WriteModelKind::kBounce && text == m.name) return WriteModel{m.kind, 0};
  }
  return InvalidArgument(fmt::format("write model '{}': expected pipelined, bounce:N or discard", text));
}

std::string WriteModelName(const WriteModel& model) {
  if (model.kind == WriteModelKind::kBounce) return fmt::format("{}{}", kBouncePrefix, model.bounce_blocks);
  return std::string(KindName(model.kind));
}

Result<std::unique_ptr<WriteSink>> MakeWriteSink(const WriteModel& model, const Device& device,
                                                 const WriterOptions& options) {
  switch (model.kind) {
    case WriteModelKind::kPipelined: {
      FP_ASSIGN_OR_RETURN(auto writer, ImageWriter::Create({device}, options));
      return std::unique_ptr<WriteSink>(std::move(writer));
    }
    case WriteModelKind::kBounce: {
      BounceOptions bo{.buffer_bytes = uint64_t{model.bounce_blocks} * device.geometry.logical_block,
                       .sync = options.sync};
      FP_ASSIGN_OR_RETURN(auto writer, BounceWriter::Create(device, bo));
      return std::unique_ptr<WriteSink>(std::move(writer));
    }
    case WriteModelKind::kDiscard:
      return std::unique_ptr<WriteSink>(std::make_unique<DiscardWriter>(device));
  }
  return Internal("unknown write model");
}

}  // namespace flashpipe::io
