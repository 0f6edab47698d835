//===- AccessProfiler.cpp - warp-level memory requests from lane accesses -===//

#include "AccessProfiler.h"

#include <algorithm>
#include <cmath>

namespace kiln {
namespace emu {

AccessCounts &AccessCounts::operator+=(const AccessCounts &o) {
  for (uint64_t AccessCounts::*count : kScaled)
    this->*count += o.*count;
  blocksEmulated += o.blocksEmulated;
  blocksInGrid += o.blocksInGrid;
  return *this;
}

unsigned sharedWavefronts(const std::vector<LaneAccess> &phase) {
  // bank -> the distinct words of it the phase touches
  std::vector<std::vector<uintptr_t>> banks(32);
  unsigned most = 0;
  for (const LaneAccess &a : phase)
    for (uintptr_t word = a.address / 4; word <= (a.address + a.bytes - 1) / 4; ++word) {
      std::vector<uintptr_t> &words = banks[word % 32];
      if (std::find(words.begin(), words.end(), word) == words.end()) {
        words.push_back(word);
        most = std::max(most, static_cast<unsigned>(words.size()));
      }
    }
  return most;
}

AccessProfiler::AccessProfiler(Profile &profile, unsigned warps)
    : profile_(profile), pending_(warps), touchedRanges_(profile.global.size()) {}

AccessProfiler::~AccessProfiler() = default;

uintptr_t AccessProfiler::globalAddress(const void *address) {
  auto a = reinterpret_cast<uintptr_t>(address);
  for (size_t r = 0; r < profile_.global.size(); ++r) {
    auto begin = reinterpret_cast<uintptr_t>(profile_.global[r].data);
    if (a >= begin && a < begin + profile_.global[r].bytes) {
      touchedRanges_[r] = true;
      // Buffers 2^40 bytes apart: none is that large.
      return (static_cast<uintptr_t>(r + 1) << 40) + (a - begin);
    }
  }
  return 0;
}

void AccessProfiler::record(unsigned warp, unsigned lane, uintptr_t site, uint32_t k,
                            Space space, bool store, uintptr_t address, unsigned bytes) {
  Key key{site, k, static_cast<uint32_t>(space) * 2 + store};
  Group &group = pending_[warp][key];
  group.space = space;
  group.store = store;
  group.lanes.push_back({lane, address, bytes});
}

void AccessProfiler::globalRequest(bool store, const std::vector<LaneAccess> &lanes) {
  std::vector<uint64_t> sectors;
  std::vector<std::pair<uintptr_t, uintptr_t>> spans; // [begin, end) of each lane
  for (const LaneAccess &a : lanes) {
    spans.push_back({a.address, a.address + a.bytes});
    for (uint64_t s = a.address / 32; s <= (a.address + a.bytes - 1) / 32; ++s)
      sectors.push_back(s);
  }
  // Requested: the distinct bytes (lanes reading the same element share it).
  std::sort(spans.begin(), spans.end());
  uint64_t requested = 0;
  uintptr_t covered = 0;
  for (auto [begin, end] : spans) {
    begin = std::max(begin, covered);
    if (end > begin) {
      requested += end - begin;
      covered = end;
    }
  }
  std::sort(sectors.begin(), sectors.end());
  sectors.erase(std::unique(sectors.begin(), sectors.end()), sectors.end());
  for (uint64_t s : sectors)
    if (touchedSectors_.insert(s).second)
      counts_.dramBytes += 32;
  if (store) {
    ++counts_.globalStoreRequests;
    counts_.globalStoreRequestedBytes += requested;
    counts_.globalStoreSectors += sectors.size();
  } else {
    ++counts_.globalLoadRequests;
    counts_.globalLoadRequestedBytes += requested;
    counts_.globalLoadSectors += sectors.size();
  }
}

void AccessProfiler::sharedRequest(const std::vector<std::vector<LaneAccess>> &phases) {
  for (const std::vector<LaneAccess> &phase : phases) {
    if (phase.empty())
      continue;
    ++counts_.sharedRequests;
    counts_.sharedWavefronts += sharedWavefronts(phase);
  }
}

void AccessProfiler::flushWarp(unsigned warp) {
  for (auto &[key, group] : pending_[warp]) {
    if (group.space == Space::Global) {
      globalRequest(group.store, group.lanes);
      continue;
    }
    // A warp's access of 8 bytes per lane is served by half-warps, of 16
    // bytes by quarter-warps.
    unsigned widest = 0;
    for (const LaneAccess &a : group.lanes)
      widest = std::max(widest, a.bytes);
    unsigned lanesPerPhase = widest > 8 ? 8 : widest > 4 ? 16 : 32;
    std::vector<std::vector<LaneAccess>> phases(32 / lanesPerPhase);
    for (const LaneAccess &a : group.lanes)
      phases[a.lane / lanesPerPhase].push_back(a);
    sharedRequest(phases);
  }
  pending_[warp].clear();
}

void AccessProfiler::finish(uint64_t blocksInGrid) {
  for (unsigned w = 0; w < pending_.size(); ++w)
    flushWarp(w);
  counts_.asyncCopyRequests = (asyncCopyLanes_ + 31) / 32;
  asyncCopyLanes_ = 0;
  uint64_t emulated = counts_.blocksEmulated;
  if (emulated > 0 && emulated < blocksInGrid) {
    double scale = static_cast<double>(blocksInGrid) / static_cast<double>(emulated);
    for (uint64_t AccessCounts::*count : AccessCounts::kScaled)
      counts_.*count =
          static_cast<uint64_t>(std::llround(static_cast<double>(counts_.*count) * scale));
    // Blocks share what they read (a GEMM's panels): the whole grid fetches
    // each touched buffer at most once.
    uint64_t footprint = 0;
    for (size_t r = 0; r < touchedRanges_.size(); ++r)
      if (touchedRanges_[r])
        footprint += (profile_.global[r].bytes + 31) / 32 * 32;
    counts_.dramBytes = std::min(counts_.dramBytes, footprint);
  }
  counts_.blocksInGrid = blocksInGrid;
  profile_.counts += counts_;
  counts_ = AccessCounts();
}

} // namespace emu
} // namespace kiln
