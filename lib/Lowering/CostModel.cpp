//===- CostModel.cpp - roofline estimates for matmul implementations ------===//

#include "kiln/Lowering/CostModel.h"

#include <algorithm>
#include <cmath>

namespace mlir {
namespace kiln {

namespace {

// Datasheet peaks (dense), SXM parts. H200 has H100's SMs and clocks with
// more bandwidth; H100's 3.35 TB/s is the conservative figure for sm_90.
const GpuSpec kSpecs[] = {
    {"A100", 80, 108, 19.5, 156.0, 312.0, 2039.0, uint64_t(4) << 20},
    {"H100", 90, 132, 67.0, 495.0, 989.0, 3350.0, uint64_t(32) << 20},
};

// Fixed cost of one call: a kernel launch, and a cuBLASLt call (argument
// checks and its launch; the algorithm is picked once, at load).
constexpr double kKernelLaunchUs = 3.0;
constexpr double kLibraryCallUs = 5.0;
// Fraction of peak reached on large problems. cuBLASLt's tuned kernels
// (asynchronous copies, pipelining, swizzled tiles) against kiln's simpler
// shared-memory tiles: 64x64 CUDA-core tiles with 4x4 per thread, and wmma
// fragments without an asynchronous copy pipeline.
constexpr double kLibraryEfficiency = 0.75;
constexpr double kGeneratedCudaCoreEfficiency = 0.35;
constexpr double kGeneratedTensorCoreEfficiency = 0.25;
// Resident blocks per SM for the generated tiles (256 or 64 threads with
// modest registers and 8-16 KiB of shared memory).
constexpr int64_t kBlocksPerSm = 2;

} // namespace

const GpuSpec &gpuSpecFor(int arch) {
  const GpuSpec *chosen = &kSpecs[0];
  for (const GpuSpec &spec : kSpecs)
    if (spec.arch <= arch)
      chosen = &spec;
  return *chosen;
}

GemmEstimate estimateGemm(const GpuSpec &gpu, const GemmProblem &p) {
  double flops = 2.0 * double(p.m) * double(p.n) * double(p.k) * double(p.batch);
  double peakTflops = !p.tensorCores ? gpu.cudaCoreTflops
                      : p.tf32       ? gpu.tf32Tflops
                                     : gpu.halfTflops;
  double peakFlopsPerUs = peakTflops * 1e6;
  double memoryUs = double(p.bytesMoved) / (gpu.bandwidthGBs * 1e3);

  // The generated kernel's tiles, as the matmul emitter picks them: 64x64,
  // or 32x32 CUDA-core tiles when 64x64 leaves SMs idle.
  auto tiles = [&](int64_t tile) {
    return p.batch * ((p.m + tile - 1) / tile) * ((p.n + tile - 1) / tile);
  };
  int64_t blocks = tiles(64);
  if (!p.tensorCores && blocks < gpu.sms)
    blocks = tiles(32);
  int64_t slots = int64_t(gpu.sms) * kBlocksPerSm;
  int64_t waves = std::max<int64_t>(1, (blocks + slots - 1) / slots);
  double waveUse = double(blocks) / double(waves * slots);
  double generatedEfficiency =
      (p.tensorCores ? kGeneratedTensorCoreEfficiency : kGeneratedCudaCoreEfficiency) * waveUse;

  GemmEstimate e;
  e.generatedUs = kKernelLaunchUs +
                  std::max(flops / (peakFlopsPerUs * std::max(generatedEfficiency, 1e-6)), memoryUs);
  e.libraryUs = kLibraryCallUs + std::max(flops / (peakFlopsPerUs * kLibraryEfficiency), memoryUs);
  return e;
}

} // namespace kiln
} // namespace mlir
