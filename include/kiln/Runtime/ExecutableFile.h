//===- ExecutableFile.h - the .kx file around the payload -------*- C++ -*-===//
//
// A .kx file is a 64-byte header followed by a FlatBuffers payload
// (ExecutableFormat.fbs). The header carries a magic, the format version, the
// payload size and a checksum of the payload, so truncation and corruption
// are caught before the payload is parsed. Shared by the compiler (writer)
// and the runtime (loader); no MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_EXECUTABLEFILE_H
#define KILN_RUNTIME_EXECUTABLEFILE_H

#include <cstddef>
#include <cstdint>

namespace kiln {
namespace rt {

constexpr char kFileMagic[8] = {'K', 'I', 'L', 'N', 'E', 'X', 'E', '\0'};
/// Bumped whenever a change is not backward compatible.
constexpr uint32_t kFormatVersion = 1;
/// The payload starts 64 bytes in, so its 32-byte-aligned weights stay
/// aligned when the file is mapped.
constexpr uint32_t kHeaderSize = 64;

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t headerSize;
  uint64_t payloadSize;
  uint64_t payloadChecksum;
  uint8_t reserved[32];
};
static_assert(sizeof(FileHeader) == kHeaderSize, "header layout");

/// 64-bit FNV-1a of `size` bytes.
inline uint64_t fnv1a64(const uint8_t *data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_EXECUTABLEFILE_H
