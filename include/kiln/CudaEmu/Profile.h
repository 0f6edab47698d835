//===- Profile.h - what an emulated kernel asks of the memory system -*- C++ -*-===//
//
// With a profile attached to a launch, the emulator counts, for every
// warp-level memory instruction, what the GPU's memory system would have
// to do for it: the 32-byte sectors its active lanes touch in global memory
// (coalescing), the shared-memory wavefronts it needs with 32 banks of 4
// bytes (bank conflicts), and the Tensor Core work of the warp's mma
// operations. The lanes of a warp are matched by the k-th execution of the
// same access site (instruction) since the last __syncthreads.
//
// Where the accesses come from: the kernel library is built by clang with
// -fsanitize-coverage=trace-loads,trace-stores, so every load and store the
// kernel text makes calls __sanitizer_cov_load<N>/store<N> (defined by the
// emulator) with its address; the return address names the site. Those of
// 16 bytes, cp.async, ldmatrix and mma go through the emulation's own
// functions and are counted there. docs/cuda-emu.md says why and what the
// counts mean.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDAEMU_PROFILE_H
#define KILN_CUDAEMU_PROFILE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {
namespace emu {

/// Counts of one or more launches of a kernel. With sampling, each launch's
/// counts are those of its emulated blocks times blocksInGrid /
/// blocksEmulated, and its DRAM bytes at most the bytes of the buffers it
/// touched (each fetched once).
struct AccessCounts {
  uint64_t globalLoadRequests = 0;       ///< warp-level load instructions
  uint64_t globalLoadRequestedBytes = 0; ///< distinct bytes the active lanes asked for
  uint64_t globalLoadSectors = 0;        ///< distinct 32-byte sectors per request, summed
  uint64_t globalStoreRequests = 0;
  uint64_t globalStoreRequestedBytes = 0;
  uint64_t globalStoreSectors = 0;
  /// Sectors fetched from or written to DRAM: the first touch of each
  /// sector in a launch (an L2 that holds a launch's working set).
  uint64_t dramBytes = 0;
  /// Shared-memory requests, each the number of wavefronts the access
  /// needs without a conflict: 1 for an access of up to 4 bytes per lane, 2
  /// for 8 (half-warps), 4 for 16 (quarter-warps), one per 8x8 matrix of an
  /// ldmatrix. shared_wavefronts / shared_requests is 1 when nothing
  /// conflicts.
  uint64_t sharedRequests = 0;
  uint64_t sharedWavefronts = 0;
  uint64_t tensorCoreFlops = 0; ///< 2 per multiply-add of the mma operations
  /// cp.async copies / 32 (a warp's worth each): the kernel keeps loads in
  /// flight without warps waiting on them (its bandwidth does not depend
  /// on occupancy).
  uint64_t asyncCopyRequests = 0;
  uint64_t blocksEmulated = 0;
  uint64_t blocksInGrid = 0;

  AccessCounts &operator+=(const AccessCounts &other);

  /// The counts a sampled launch scales to its grid (all but the block
  /// counts): one list, for sums and scaling alike.
  static constexpr uint64_t AccessCounts::*kScaled[] = {
      &AccessCounts::globalLoadRequests,  &AccessCounts::globalLoadRequestedBytes,
      &AccessCounts::globalLoadSectors,   &AccessCounts::globalStoreRequests,
      &AccessCounts::globalStoreRequestedBytes, &AccessCounts::globalStoreSectors,
      &AccessCounts::dramBytes,           &AccessCounts::sharedRequests,
      &AccessCounts::sharedWavefronts,    &AccessCounts::tensorCoreFlops,
      &AccessCounts::asyncCopyRequests};
};

/// A buffer kernels may read or write: accesses elsewhere (the threads'
/// stacks, the emulator's own state) are not global memory.
struct MemoryRange {
  const void *data;
  size_t bytes;
};

/// Attach to LaunchOptions::profile: the launch adds its counts here.
struct Profile {
  std::vector<MemoryRange> global;
  /// Emulate only this many blocks, evenly spaced over the grid (0: all).
  /// The outputs are then not meaningful.
  unsigned sampleBlocks = 0;
  AccessCounts counts; ///< summed over the launches
};

} // namespace emu
} // namespace kiln

#endif // KILN_CUDAEMU_PROFILE_H
