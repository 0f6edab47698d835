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
/// Bumped whenever a change is not backward compatible (2: the lane-wise
/// payload checksum; 3: cuDNN steps may be channels last, and weights are
/// stored in their type's layout, which an older runtime would misread; 4:
/// a kernel may need dynamic shared memory, which an older runtime would
/// launch it without).
constexpr uint32_t kFormatVersion = 4;
/// The oldest version this runtime reads (version 3 files have no dynamic
/// shared memory: their field reads 0).
constexpr uint32_t kOldestFormatVersion = 3;
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

/// The payload checksum: FNV-1a steps over the payload's 64-bit
/// little-endian words in 8 interleaved lanes (independent multiply chains,
/// so it runs near memory speed on a multi-hundred-megabyte payload), then
/// the lanes and the trailing bytes folded bytewise. Every step is a
/// bijection of the lane, so any single changed byte changes the result.
inline uint64_t payloadChecksum(const uint8_t *data, size_t size) {
  constexpr uint64_t kBasis = 0xcbf29ce484222325ull, kPrime = 0x100000001b3ull;
  uint64_t lanes[8];
  for (uint64_t l = 0; l < 8; ++l)
    lanes[l] = kBasis ^ l;
  size_t blocks = size / 64;
  for (size_t b = 0; b < blocks; ++b)
    for (size_t l = 0; l < 8; ++l) {
      uint64_t word = 0;
      for (size_t k = 0; k < 8; ++k) // little-endian on every host
        word |= static_cast<uint64_t>(data[b * 64 + l * 8 + k]) << (8 * k);
      lanes[l] = (lanes[l] ^ word) * kPrime;
    }
  uint64_t hash = kBasis;
  auto fold = [&](uint8_t byte) {
    hash ^= byte;
    hash *= kPrime;
  };
  for (uint64_t lane : lanes)
    for (size_t k = 0; k < 8; ++k)
      fold(static_cast<uint8_t>(lane >> (8 * k)));
  for (size_t i = blocks * 64; i < size; ++i)
    fold(data[i]);
  return hash;
}

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_EXECUTABLEFILE_H
