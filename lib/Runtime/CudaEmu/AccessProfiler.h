//===- AccessProfiler.h - warp-level memory requests from lane accesses -*- C++ -*-===//
//
// The emulator hands every traced access of a lane to the profiler with
// its site and the lane's count of that site since the last barrier; the
// profiler groups the lanes of a warp by (site, count), and when the warp
// reaches a barrier turns each group into one warp-level request: its
// global sectors or its shared-memory wavefronts (Profile.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDAEMU_ACCESSPROFILER_H
#define KILN_LIB_RUNTIME_CUDAEMU_ACCESSPROFILER_H

#include "kiln/CudaEmu/Profile.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace emu {

enum class Space : uint8_t { Global, Shared };

/// One lane's access: `bytes` at `address`.
struct LaneAccess {
  unsigned lane;
  uintptr_t address;
  unsigned bytes;
};

class AccessProfiler {
public:
  AccessProfiler(Profile &profile, unsigned warps);
  ~AccessProfiler();

  /// Where `address` would be on a GPU, when it lies in one of the
  /// profile's global buffers (and notes that buffer as touched): each
  /// buffer at a base aligned as cudaMalloc aligns (256 bytes), so the
  /// sectors a request touches do not depend on where the host (or the
  /// checked mode's guard pages) put the buffer; 0 for other memory.
  uintptr_t globalAddress(const void *address);
  /// Lane `lane` of warp `warp` executes site `site` for the `k`-th time
  /// since its last barrier.
  void record(unsigned warp, unsigned lane, uintptr_t site, uint32_t k, Space space, bool store,
              uintptr_t address, unsigned bytes);
  /// Every group of `warp` becomes a request (at a barrier or the end).
  void flushWarp(unsigned warp);
  /// One shared-memory request served in `phases` (lane groups whose
  /// wavefronts add up), as ldmatrix's matrices are.
  void sharedRequest(const std::vector<std::vector<LaneAccess>> &phases);
  void tensorCoreFlops(uint64_t flops) { counts_.tensorCoreFlops += flops; }
  /// One lane's cp.async; a warp's 32 make one request.
  void asyncCopy() { ++asyncCopyLanes_; }
  void blockDone() { ++counts_.blocksEmulated; }
  /// Adds the launch's counts to the profile.
  void finish(uint64_t blocksInGrid);

private:
  struct Key {
    uintptr_t site;
    uint32_t k;
    uint32_t kind; ///< space and direction
    bool operator==(const Key &o) const { return site == o.site && k == o.k && kind == o.kind; }
  };
  struct KeyHash {
    size_t operator()(const Key &key) const {
      return std::hash<uintptr_t>()(key.site * 31 + key.k) ^ key.kind;
    }
  };
  struct Group {
    Space space;
    bool store;
    std::vector<LaneAccess> lanes;
  };
  void globalRequest(bool store, const std::vector<LaneAccess> &lanes);

  Profile &profile_;
  AccessCounts counts_;
  std::vector<std::unordered_map<Key, Group, KeyHash>> pending_; ///< per warp
  std::unordered_set<uint64_t> touchedSectors_;
  std::vector<bool> touchedRanges_;
  uint64_t asyncCopyLanes_ = 0;
};

/// The wavefronts one shared-memory phase needs: the most distinct 4-byte
/// words any of the 32 banks holds among the lanes' accesses (lanes
/// reading the same word share it).
unsigned sharedWavefronts(const std::vector<LaneAccess> &phase);

} // namespace emu
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDAEMU_ACCESSPROFILER_H
