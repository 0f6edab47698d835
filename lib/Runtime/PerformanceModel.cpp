//===- PerformanceModel.cpp - predicted GPU time from cuda-emu's counts ---===//

#include "kiln/Runtime/PerformanceModel.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace kiln {
namespace rt {

const GpuModel &h200Model() {
  static const GpuModel model;
  return model;
}

int residentBlocks(const GpuModel &gpu, unsigned threads, int registers, int sharedBytes) {
  int warps = static_cast<int>((threads + 31) / 32);
  int blocks = std::min(gpu.maxBlocksPerSM, gpu.maxWarpsPerSM / std::max(warps, 1));
  if (registers > 0) {
    int perWarp = (registers * 32 + gpu.registerUnitPerWarp - 1) / gpu.registerUnitPerWarp *
                  gpu.registerUnitPerWarp;
    blocks = std::min(blocks, gpu.registersPerSM / (perWarp * warps));
  }
  if (sharedBytes > 0)
    blocks = std::min(blocks, gpu.sharedBytesPerSM / (sharedBytes + gpu.sharedReservedPerBlock));
  return std::max(blocks, 0);
}

Prediction predict(const GpuModel &gpu, const KernelProfile &p) {
  Prediction r;
  const emu::AccessCounts &c = p.counts;
  double launches = static_cast<double>(std::max<uint64_t>(p.launches, 1));
  r.blocksPerSM = residentBlocks(gpu, p.block, p.registers, p.sharedBytes);
  r.occupancy = r.blocksPerSM * ((p.block + 31) / 32) / static_cast<double>(gpu.maxWarpsPerSM);
  double tensor = static_cast<double>(c.tensorCoreFlops);
  double total = p.flops * launches;
  r.cudaCoreFlops = static_cast<uint64_t>(std::max(0.0, total - tensor));

  // Per launch. The busiest SM runs ceil(grid / SMs) blocks: a unit's work
  // is spread over that many blocks' worth of one SM's rate.
  double grid = std::max(1u, p.grid);
  double activeSMs = std::min<double>(gpu.sms, grid);
  double smShare = std::ceil(grid / gpu.sms) * gpu.sms / grid; // >= 1: wave quantization
  // Loads in flight come from resident warps, unless cp.async keeps them
  // in flight (a pipelined kernel).
  double latencyHidden = c.asyncCopyRequests > 0
                             ? 1.0
                             : std::min(1.0, r.occupancy / gpu.occupancyForBandwidth);
  double bandwidthShare = activeSMs / gpu.sms * latencyHidden;
  bandwidthShare = std::max(bandwidthShare, 1e-3);
  double sectorsBytes = 32.0 * static_cast<double>(c.globalLoadSectors + c.globalStoreSectors);
  double smClocksPerUs = gpu.clockGHz * 1e3;
  std::vector<std::pair<const char *, double>> terms = {
      {"dram", static_cast<double>(c.dramBytes) / launches / (gpu.dramBytesPerUs * bandwidthShare)},
      {"l2", sectorsBytes / launches / (gpu.l2BytesPerUs * bandwidthShare)},
      {"shared", static_cast<double>(c.sharedWavefronts) / launches * smShare /
                     (gpu.sharedWavefrontsPerClock * smClocksPerUs * gpu.sms)},
      {"tensor cores",
       tensor / launches * smShare / (gpu.tensorFlopsPerUs * gpu.mmaSyncFraction)},
      {"cuda cores",
       static_cast<double>(r.cudaCoreFlops) / launches * smShare / gpu.cudaCoreFlopsPerUs},
  };
  auto longest = std::max_element(terms.begin(), terms.end(),
                                  [](const auto &a, const auto &b) { return a.second < b.second; });
  r.predictedUs = longest->second;
  r.limiter = longest->first;
  double computeRate = p.tensorCores ? gpu.tensorFlopsPerUs : gpu.cudaCoreFlopsPerUs;
  r.idealUs = std::max(static_cast<double>(p.minimumBytes) / gpu.dramBytesPerUs,
                       p.flops / computeRate);
  return r;
}

} // namespace rt
} // namespace kiln
