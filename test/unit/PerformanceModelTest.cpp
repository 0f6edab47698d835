//===- PerformanceModelTest.cpp - the predicted-time model's arithmetic ---===//
//
// Occupancy follows sm_90's limits, and each term of the roofline gives
// the time its work takes at its rate; the longest names the limiter.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/PerformanceModel.h"

#include "gtest/gtest.h"

using namespace kiln;
using namespace kiln::rt;

namespace {

TEST(PerformanceModel, ResidentBlocksFollowSm90Limits) {
  const GpuModel &gpu = h200Model();
  // 8 warps of 191 registers (192 a thread, 6144 a warp): one block's 49152
  // registers fit once in 64K.
  EXPECT_EQ(residentBlocks(gpu, 256, 191, 37888), 1);
  // 4 warps of 32 registers: the 64-warp limit (16 blocks) before registers.
  EXPECT_EQ(residentBlocks(gpu, 128, 32, 0), 16);
  // Shared memory: 228 KB (233472 bytes) over 48 KB + the 1 KB reserved.
  EXPECT_EQ(residentBlocks(gpu, 32, 16, 48 * 1024), 4);
  // Tiny blocks: the 32-block limit.
  EXPECT_EQ(residentBlocks(gpu, 32, 16, 0), 32);
  // Unknown registers set no limit.
  EXPECT_EQ(residentBlocks(gpu, 1024, -1, 0), 2);
}

KernelProfile fullGpu() {
  KernelProfile p;
  p.launches = 1;
  p.grid = 132 * 8; // whole waves
  p.block = 256;
  p.registers = 32; // occupancy 1
  p.sharedBytes = 0;
  return p;
}

TEST(PerformanceModel, DramBytesAtTheMeasuredRate) {
  const GpuModel &gpu = h200Model();
  KernelProfile p = fullGpu();
  p.counts.dramBytes = static_cast<uint64_t>(gpu.dramBytesPerUs * 10); // 10 us of DRAM
  p.minimumBytes = p.counts.dramBytes;
  Prediction r = predict(gpu, p);
  EXPECT_DOUBLE_EQ(r.occupancy, 1.0);
  EXPECT_NEAR(r.predictedUs, 10.0, 1e-6);
  EXPECT_EQ(r.limiter, "dram");
  EXPECT_NEAR(r.idealUs, 10.0, 1e-6);
}

TEST(PerformanceModel, MmaSyncAtTwoThirdsOfTheGemmRate) {
  const GpuModel &gpu = h200Model();
  KernelProfile p = fullGpu();
  p.flops = gpu.tensorFlopsPerUs * 20; // 20 us at the full Tensor Core rate
  p.tensorCores = true;
  p.counts.tensorCoreFlops = static_cast<uint64_t>(p.flops);
  Prediction r = predict(gpu, p);
  EXPECT_EQ(r.limiter, "tensor cores");
  EXPECT_NEAR(r.predictedUs, 20.0 / gpu.mmaSyncFraction, 1e-3);
  EXPECT_NEAR(r.idealUs, 20.0, 1e-6);
  EXPECT_EQ(r.cudaCoreFlops, 0u); // all of the step's FLOPs ran on Tensor Cores
}

TEST(PerformanceModel, AGridOfOneBlockUsesOneSm) {
  const GpuModel &gpu = h200Model();
  KernelProfile p = fullGpu();
  p.grid = 1;
  p.counts.sharedWavefronts = 1000;
  Prediction r = predict(gpu, p);
  // One wavefront per clock on the one busy SM.
  EXPECT_EQ(r.limiter, "shared");
  EXPECT_NEAR(r.predictedUs, 1000 / (gpu.clockGHz * 1e3), 1e-6);
}

TEST(PerformanceModel, LowOccupancySlowsBandwidthUnlessCopiesAreAsync) {
  const GpuModel &gpu = h200Model();
  KernelProfile p = fullGpu();
  p.block = 32;
  p.registers = 255; // 8192 registers a warp: 8 warps an SM, occupancy 1/8
  p.counts.dramBytes = static_cast<uint64_t>(gpu.dramBytesPerUs * 10);
  Prediction slow = predict(gpu, p);
  EXPECT_DOUBLE_EQ(slow.occupancy, 0.125);
  EXPECT_NEAR(slow.predictedUs, 10.0 * gpu.occupancyForBandwidth / 0.125, 1e-6);
  p.counts.asyncCopyRequests = 1;
  EXPECT_NEAR(predict(gpu, p).predictedUs, 10.0, 1e-6);
}

} // namespace

namespace {

/// A memory-bound kernel as cuda-emu profiled it at e4389d2, and the time
/// an H200 took for it (median of 20 CUDA-event-timed runs, launch cost
/// included; docs/gpu-results.md).
struct MeasuredKernel {
  const char *name;
  unsigned grid, block;
  int registers, sharedBytes;
  uint64_t loadSectors, storeSectors, dramBytes, sharedWavefronts;
  double flops, measuredUs;
};

} // namespace

// The model's DRAM, L2 and launch constants against what the GPU measured:
// each large memory-bound kernel within 15% (the Tensor Core kernels are
// not here: the model leaves out the latency that bounds them, and
// docs/cuda-emu.md says by how much it misses).
TEST(PerformanceModel, MemoryBoundKernelsMatchTheirH200Measurements) {
  const MeasuredKernel kernels[] = {
      {"layer norm f32 4096x1024", 512, 256, 64, 0, 1572864, 524288, 33562624, 0, 33554432,
       10.8},
      {"softmax f32 4096x1024", 512, 256, 64, 0, 524288, 524288, 33554432, 0, 33554432, 9.7},
      {"transpose f32 2048x2048", 4096, 256, 29, 4224, 524288, 524288, 33554432, 262144, 0, 9.3},
      {"gelu f32 2048x2048", 4096, 256, 31, 0, 524288, 524288, 33554432, 0, 0, 9.7},
      {"reduce_sum f32 4096x1024", 512, 256, 30, 32, 524288, 512, 16793600, 4608, 4194304,
       5.9},
  };
  const GpuModel &gpu = h200Model();
  for (const MeasuredKernel &k : kernels) {
    KernelProfile p;
    p.launches = 1;
    p.grid = k.grid;
    p.block = k.block;
    p.registers = k.registers;
    p.sharedBytes = k.sharedBytes;
    p.flops = k.flops;
    p.counts.globalLoadSectors = k.loadSectors;
    p.counts.globalStoreSectors = k.storeSectors;
    p.counts.dramBytes = k.dramBytes;
    p.counts.sharedWavefronts = k.sharedWavefronts;
    Prediction r = predict(gpu, p);
    double predicted = r.predictedUs + gpu.launchUs;
    EXPECT_EQ(r.limiter, "dram") << k.name;
    EXPECT_NEAR(predicted / k.measuredUs, 1.0, 0.15)
        << k.name << ": predicted " << predicted << " us, measured " << k.measuredUs << " us";
  }
}
