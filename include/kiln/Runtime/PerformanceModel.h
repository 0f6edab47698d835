//===- PerformanceModel.h - predicted GPU time from cuda-emu's counts -*- C++ -*-===//
//
// A roofline over what the emulator counted for a kernel (Profile.h): the
// time its DRAM bytes, its L2 sectors, its shared-memory wavefronts, its
// Tensor Core and its CUDA-core work would each take on an H200, spread
// over the SMs its grid keeps busy; the longest is the prediction, and
// names the limiter. The ideal is the step's least possible time: its
// minimum bytes at the DRAM rate, or its FLOPs at the unit's peak. Every
// number is predicted, not measured: the constants below are the model,
// in one place, for the first GPU run to correct (scripts/gpu-check prints
// predicted against measured). docs/cuda-emu.md explains the model.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_PERFORMANCEMODEL_H
#define KILN_RUNTIME_PERFORMANCEMODEL_H

#include "kiln/Runtime/Runtime.h"

#include <string>

namespace kiln {
namespace rt {

struct GpuModel {
  const char *name = "H200 (sm_90)";
  int sms = 132;
  double clockGHz = 1.755; ///< sustained SM clock under load (not yet measured)
  /// Measured on an H200: a device-to-device copy, and cuBLAS's bf16 GEMM.
  double dramBytesPerUs = 4.3e6;
  double tensorFlopsPerUs = 788e6;
  /// mma.sync and wmma reach this fraction of the (wgmma) GEMM rate.
  double mmaSyncFraction = 2.0 / 3.0;
  double cudaCoreFlopsPerUs = 67e6; ///< f32 FMA on CUDA cores
  /// L2 to SM sector throughput, all SMs together (not yet measured).
  double l2BytesPerUs = 10e6;
  /// One shared-memory wavefront per SM per clock.
  double sharedWavefrontsPerClock = 1;
  /// Occupancy an SM needs to keep its share of DRAM and L2 bandwidth busy
  /// without an explicit pipeline (below it, bandwidth scales down; a
  /// kernel that copies with cp.async is not limited so).
  double occupancyForBandwidth = 0.25;
  double launchUs = 2.5; ///< fixed cost of a launch, reported apart
  // sm_90 residency limits.
  int maxThreadsPerSM = 2048, maxBlocksPerSM = 32, maxWarpsPerSM = 64;
  int registersPerSM = 65536, registerUnitPerWarp = 256;
  int sharedBytesPerSM = 233472, sharedReservedPerBlock = 1024;
};

const GpuModel &h200Model();

struct Prediction {
  int blocksPerSM = 0;
  double occupancy = 0;     ///< resident warps / 64
  double predictedUs = 0;   ///< per launch, without the launch cost
  double idealUs = 0;       ///< per launch
  std::string limiter;      ///< "dram", "l2", "shared", "tensor cores", "cuda cores"
  uint64_t cudaCoreFlops = 0; ///< over all launches
};

/// Blocks of `threads` threads with `registers` per thread (-1: unknown,
/// no limit) and `sharedBytes` each that one SM holds at once.
int residentBlocks(const GpuModel &gpu, unsigned threads, int registers, int sharedBytes);

Prediction predict(const GpuModel &gpu, const KernelProfile &profile);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_PERFORMANCEMODEL_H
