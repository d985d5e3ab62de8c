#include "sparse/expand.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "base/endian.h"
#include "base/fd_io.h"
#include "sparse/decode_fd.h"
#include "sparse/files.h"
#include "sparse/read_ahead.h"

namespace flashpipe::sparse {

FdImageSink::FdImageSink(int fd, std::string name, Kind kind, uint64_t capacity, WriteBehindOptions options)
    : name_(std::move(name)), kind_(kind), capacity_(capacity),
      writer_(fd, name_, kind == Kind::kStream ? WriteBehind::Mode::kStream : WriteBehind::Mode::kSeekable, options) {}

Status FdImageSink::OnHeader(const FileHeader& h) {
  if (kind_ == Kind::kDevice && capacity_ > 0 && h.image_size() > capacity_) {
    return NoSpace(fmt::format("image of {} bytes does not fit {} ({} bytes)", h.image_size(), name_, capacity_));
  }
  if (kind_ == Kind::kStream && writer_.end() > 0) {
    return InvalidArgument(fmt::format("{} is a stream: only one image can be written to it", name_));
  }
  image_size_ = std::max(image_size_, h.image_size());
  return Status::Ok();
}

Status FdImageSink::OnRaw(uint64_t offset, std::span<const uint8_t> data) { return writer_.Write(offset, data); }

Status FdImageSink::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  if (pattern == 0 && kind_ == Kind::kFile) return writer_.Zero(offset, length);
  return writer_.Fill(offset, length, pattern);
}

Status FdImageSink::OnSkip(uint64_t offset, uint64_t length) {
  // A regular file keeps what an earlier image put there (a fresh file: a
  // hole); so does a device. A stream cannot skip: zeros.
  if (kind_ == Kind::kStream) return writer_.Fill(offset, length, 0);
  return Status::Ok();
}

namespace {

Status WithInputName(const Status& s, const InputFile& in) {
  return s.code() == Code::kCorrupt ? s.WithContext(in.name) : s;
}

// Every input's header, and for a file every chunk header, before anything
// is created; returns the largest expanded size.
Result<uint64_t> CheckInputs(std::span<InputFile> inputs) {
  uint64_t size = 0;
  for (InputFile& in : inputs) {
    Result<FileHeader> h = in.seekable ? CheckSparseFile(in.fd.get(), in.start, in.size, in.name)
                                       : ReadHeader(in.fd.get(), in.name, &in.head);
    if (!h.ok()) return WithInputName(h.status(), in);
    size = std::max(size, h->image_size());
  }
  return size;
}

// Reads a seekable input from where it was opened, a stream from where its
// header check left it; leaves a file's position at its end, as reading it
// with read(2) would have.
Status Decode(const InputFile& in, FdImageSink& sink, DecoderOptions options) {
  std::unique_ptr<ReadAhead> reader =
      in.seekable ? std::make_unique<ReadAhead>(in.fd.get(), in.name, ReadAhead::OneRange(in.start, ReadAhead::kToEof))
                  : ReadAhead::Stream(in.fd.get(), in.name, in.head.size());
  FP_ASSIGN_OR_RETURN(uint64_t end, DecodeAhead(*reader, sink, options, in.head));
  if (in.seekable && ::lseek(in.fd.get(), static_cast<off_t>(end), SEEK_SET) < 0) {
    return ErrnoError(fmt::format("seek {}", in.name));
  }
  return Status::Ok();
}

Status DecodeAll(std::span<const InputFile> inputs, FdImageSink& sink, DecoderOptions options) {
  for (const InputFile& in : inputs) {
    Status s = Decode(in, sink, options);
    if (!s.ok()) return WithInputName(s, in);
  }
  return sink.Finish();
}

FdImageSink::Kind SinkKind(OutputFile::Kind kind) {
  switch (kind) {
    case OutputFile::Kind::kFile: return FdImageSink::Kind::kFile;
    case OutputFile::Kind::kDevice: return FdImageSink::Kind::kDevice;
    case OutputFile::Kind::kStream: return FdImageSink::Kind::kStream;
  }
  return FdImageSink::Kind::kStream;
}

// Everything that can be known before writing: the output is not an input,
// a stream takes one image, every input is valid, a device is large enough.
Result<uint64_t> CheckExpand(std::span<InputFile> inputs, const OutputFile& out) {
  if (out.kind() == OutputFile::Kind::kStream && inputs.size() != 1) {
    return InvalidArgument(fmt::format("{} is a stream: it takes exactly one input", out.name()));
  }
  FP_ASSIGN_OR_RETURN(uint64_t size, CheckInputs(inputs));
  if (out.kind() == OutputFile::Kind::kDevice && size > out.device_size()) {
    return NoSpace(fmt::format("image of {} bytes does not fit {} ({} bytes); nothing written", size, out.name(),
                               out.device_size()));
  }
  return size;
}

}  // namespace

Status ExpandToPath(std::span<const std::string> paths, const std::string& output, DecoderOptions options) {
  if (paths.empty()) return InvalidArgument("no input");
  if (std::count(paths.begin(), paths.end(), "-") > 1) return InvalidArgument("stdin can be read only once");
  std::vector<InputFile> inputs;
  for (const std::string& path : paths) {
    FP_ASSIGN_OR_RETURN(InputFile in, OpenInput(path));
    inputs.push_back(std::move(in));
  }
  FP_ASSIGN_OR_RETURN(OutputFile out, OutputFile::Check(output, inputs));
  FP_ASSIGN_OR_RETURN(uint64_t size, CheckExpand(inputs, out));
  FP_RETURN_IF_ERROR(out.Open());
  FdImageSink sink(out.fd(), out.name(), SinkKind(out.kind()), out.device_size());
  FP_RETURN_IF_ERROR(DecodeAll(inputs, sink, options));
  if (out.kind() == OutputFile::Kind::kFile && ::ftruncate(out.fd(), static_cast<off_t>(size)) != 0) {
    return ErrnoError(fmt::format("truncate {}", out.name()));
  }
  return out.Commit();
}

}  // namespace flashpipe::sparse
