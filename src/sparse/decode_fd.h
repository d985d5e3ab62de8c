// Decoding sparse images from file descriptors.
//
// DecodeFd reads a sparse image from a file descriptor (file, pipe, socket)
// with large reads into one fixed buffer and feeds it to a Decoder, then
// calls Finish(). Memory is the buffer only, whatever the image size.
//
// DecodeAhead does the same from a ReadAhead (sparse/read_ahead.h): the
// input is read on threads of their own while the decoder and the sink work.
//
// ReadHeader and CheckSparseFile look at an input before anything is
// written, so that a tool can refuse a bad input before it creates or
// changes an output: ReadHeader checks the file header of a stream (the
// bytes it consumed are handed to DecodeFd later); CheckSparseFile walks a
// seekable file's chunk headers with the decoder, skipping RAW payloads
// (their presence is checked, not their bytes), so every rule but the CRC32
// values is checked at the cost of one small read per chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sparse/decoder.h"
#include "sparse/format.h"
#include "sparse/read_ahead.h"
#include "sparse/sink.h"

namespace flashpipe::sparse {

inline constexpr size_t kDecodeFdBufferSize = size_t{4} << 20;

// Decodes `head` (bytes already read from `fd`, see ReadHeader), then `fd`
// from its current position to EOF. Read errors name `name` ("read
// /tmp/x.simg at byte 0x1000: Input/output error"); decoder errors are
// returned as they are (they carry the chunk index and input offset).
Status DecodeFd(int fd, Sink& sink, DecoderOptions options, std::string_view name = "sparse input",
                std::span<const uint8_t> head = {});

// Decodes `head` (bytes already read, see ReadHeader), then every piece of
// `in` in order, then calls Finish(). Returns the input offset after the
// last piece. Read errors are ReadAhead's (name and byte offset).
Result<uint64_t> DecodeAhead(ReadAhead& in, Sink& sink, DecoderOptions options, std::span<const uint8_t> head = {});

// Reads the 28-byte file header from `fd`'s current position and checks it
// as the decoder does; the bytes read are appended to `*head`.
Result<FileHeader> ReadHeader(int fd, std::string_view name, std::vector<uint8_t>* head);

// Checks the sparse image in bytes [start, size) of the seekable `fd`
// (pread only: the position does not move). Returns its header.
Result<FileHeader> CheckSparseFile(int fd, uint64_t start, uint64_t size, std::string_view name);

}  // namespace flashpipe::sparse
