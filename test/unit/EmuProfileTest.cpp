//===- EmuProfileTest.cpp - cuda-emu's profile on kernels with known answers -===//
//
// The kernels (test/unit/emu/ProfileKernels.cu) are built with loads and
// stores traced, as kilnc --emu-profile builds a model's; each has a
// profile that follows from its access pattern: a float4 copy uses every
// byte of its sectors, a stride-32 read an eighth, a 32x32 shared
// transpose needs 32 wavefronts per read unless the tile is padded, and
// ldmatrix on 32-byte rows conflicts two ways where 48-byte rows do not,
// and wmma's tile loads and stores count as 16-byte chunks, 8 a phase. The
// mma and wmma kernels also check their results against a product.
//
//===----------------------------------------------------------------------===//

#include "kiln/CudaEmu/Emulator.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <vector>

#ifdef KILN_PROFILE_KERNELS
#include <cuda_fp16.h>

using namespace kiln::emu;

namespace {

/// The profiled kernels, loaded once.
void *kernelLibrary() {
  static void *library = dlopen(KILN_PROFILE_KERNELS, RTLD_NOW | RTLD_LOCAL);
  return library;
}

template <typename Fn> Fn kernel(const char *name) {
  void *library = kernelLibrary();
  EXPECT_NE(library, nullptr) << dlerror();
  return library ? reinterpret_cast<Fn>(dlsym(library, name)) : nullptr;
}

/// Memory for a kernel, aligned as cudaMalloc aligns.
struct Buffer {
  explicit Buffer(size_t bytes) : bytes(bytes), data(std::aligned_alloc(256, (bytes + 255) / 256 * 256)) {}
  ~Buffer() { std::free(data); }
  template <typename T> T *as() { return static_cast<T *>(data); }
  MemoryRange range() const { return {data, bytes}; }
  size_t bytes;
  void *data;
};

template <typename Body>
AccessCounts profiled(Dim3 grid, Dim3 block, std::vector<MemoryRange> global, Body body,
                      unsigned sample = 0) {
  Profile profile;
  profile.global = std::move(global);
  profile.sampleBlocks = sample;
  LaunchOptions options;
  options.profile = &profile;
  LaunchResult result = launch(grid, block, 0, options, body);
  EXPECT_TRUE(result.ok) << result.error;
  return profile.counts;
}

double loadEfficiency(const AccessCounts &c) {
  return static_cast<double>(c.globalLoadRequestedBytes) / (32.0 * c.globalLoadSectors);
}
double storeEfficiency(const AccessCounts &c) {
  return static_cast<double>(c.globalStoreRequestedBytes) / (32.0 * c.globalStoreSectors);
}

TEST(EmuProfile, CoalescedFloat4CopyUsesEverySectorByte) {
  auto copy = kernel<void (*)(const void *, void *)>("copyFloat4");
  ASSERT_NE(copy, nullptr);
  const int n = 4 * 128; // float4s
  Buffer in(n * 16), out(n * 16);
  for (int i = 0; i < 4 * n; ++i)
    in.as<float>()[i] = static_cast<float>(i) * 0.5f;
  AccessCounts c = profiled({4, 1, 1}, {128, 1, 1}, {in.range(), out.range()},
                            [&] { copy(in.data, out.data); });
  EXPECT_EQ(0, std::memcmp(in.data, out.data, n * 16));
  EXPECT_EQ(c.globalLoadRequests, n / 32u);
  EXPECT_EQ(c.globalLoadRequestedBytes, n * 16u);
  EXPECT_EQ(c.globalLoadSectors, n * 16u / 32);
  EXPECT_DOUBLE_EQ(loadEfficiency(c), 1.0);
  EXPECT_DOUBLE_EQ(storeEfficiency(c), 1.0);
  EXPECT_EQ(c.dramBytes, 2u * n * 16); // each byte once, in and out
  EXPECT_EQ(c.sharedRequests, 0u);
  EXPECT_EQ(c.tensorCoreFlops, 0u);
}

// The sectors of a request are counted where a GPU would put the buffer
// (at a 256-byte aligned base), not where the host did: buffers 16 bytes
// past a sector boundary (as cuda-emu's checked mode may place them) copy
// as efficiently as aligned ones.
TEST(EmuProfile, SectorsDoNotDependOnWhereTheHostPutTheBuffer) {
  auto copy = kernel<void (*)(const void *, void *)>("copyFloat4");
  ASSERT_NE(copy, nullptr);
  const int n = 4 * 128; // float4s
  Buffer in(n * 16 + 16), out(n * 16 + 16);
  char *from = in.as<char>() + 16, *to = out.as<char>() + 16;
  for (int i = 0; i < 4 * n; ++i)
    reinterpret_cast<float *>(from)[i] = static_cast<float>(i) * 0.25f;
  AccessCounts c = profiled({4, 1, 1}, {128, 1, 1},
                            {MemoryRange{from, n * 16u}, MemoryRange{to, n * 16u}},
                            [&] { copy(from, to); });
  EXPECT_EQ(0, std::memcmp(from, to, n * 16));
  EXPECT_EQ(c.globalLoadSectors, n * 16u / 32); // on the host: one more a request
  EXPECT_DOUBLE_EQ(loadEfficiency(c), 1.0);
  EXPECT_DOUBLE_EQ(storeEfficiency(c), 1.0);
  EXPECT_EQ(c.dramBytes, 2u * n * 16);
}

TEST(EmuProfile, StridedReadUsesAnEighthOfItsSectors) {
  auto strided = kernel<void (*)(const float *, float *)>("stridedRead");
  ASSERT_NE(strided, nullptr);
  const int n = 2 * 128;
  Buffer in(n * 32 * 4), out(n * 4);
  for (int i = 0; i < n * 32; ++i)
    in.as<float>()[i] = static_cast<float>(i % 97);
  AccessCounts c = profiled({2, 1, 1}, {128, 1, 1}, {in.range(), out.range()},
                            [&] { strided(in.as<float>(), out.as<float>()); });
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out.as<float>()[i], in.as<float>()[i * 32]);
  EXPECT_EQ(c.globalLoadRequests, n / 32u);
  EXPECT_EQ(c.globalLoadSectors, static_cast<uint64_t>(n)); // a sector per lane
  EXPECT_DOUBLE_EQ(loadEfficiency(c), 1.0 / 8);
  EXPECT_DOUBLE_EQ(storeEfficiency(c), 1.0);
}

AccessCounts transposeProfile(const char *name) {
  auto transpose = kernel<void (*)(const float *, float *)>(name);
  EXPECT_NE(transpose, nullptr);
  Buffer in(32 * 32 * 4), out(32 * 32 * 4);
  for (int i = 0; i < 32 * 32; ++i)
    in.as<float>()[i] = static_cast<float>(i);
  AccessCounts c = profiled({1, 1, 1}, {32, 32, 1}, {in.range(), out.range()},
                            [&] { transpose(in.as<float>(), out.as<float>()); });
  for (int r = 0; r < 32; ++r)
    for (int k = 0; k < 32; ++k)
      EXPECT_EQ(out.as<float>()[r * 32 + k], in.as<float>()[k * 32 + r]);
  return c;
}

TEST(EmuProfile, NaiveSharedTransposeConflictsThirtyTwoWays) {
  AccessCounts c = transposeProfile("transposeNaive");
  // 32 warps: a row store each (1 wavefront), a column read each (32).
  EXPECT_EQ(c.sharedRequests, 64u);
  EXPECT_EQ(c.sharedWavefronts, 32u * 1 + 32u * 32);
}

TEST(EmuProfile, PaddedSharedTransposeIsConflictFree) {
  AccessCounts c = transposeProfile("transposePadded");
  EXPECT_EQ(c.sharedRequests, 64u);
  EXPECT_EQ(c.sharedWavefronts, 64u);
  EXPECT_DOUBLE_EQ(loadEfficiency(c), 1.0);
  EXPECT_DOUBLE_EQ(storeEfficiency(c), 1.0);
}

AccessCounts mmaProfile(const char *name, int iterations) {
  auto mma = kernel<void (*)(const __half *, const __half *, float *, int)>(name);
  EXPECT_NE(mma, nullptr);
  // Small integers: every product and sum is exact in f16 inputs and f32.
  Buffer a(16 * 16 * 2), b(16 * 8 * 2), d(16 * 8 * 4);
  std::vector<float> fa(256), fb(128);
  for (int e = 0; e < 256; ++e) {
    fa[e] = static_cast<float>((e * 7 + 3) % 5 - 2);
    a.as<__half>()[e] = __float2half(fa[e]);
  }
  for (int e = 0; e < 128; ++e) {
    fb[e] = static_cast<float>((e * 3 + 1) % 7 - 3);
    b.as<__half>()[e] = __float2half(fb[e]);
  }
  AccessCounts c = profiled({1, 1, 1}, {32, 1, 1}, {a.range(), b.range(), d.range()}, [&] {
    mma(a.as<__half>(), b.as<__half>(), d.as<float>(), iterations);
  });
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float expected = 0;
      for (int k = 0; k < 16; ++k)
        expected += fa[i * 16 + k] * fb[k * 8 + j];
      EXPECT_EQ(d.as<float>()[i * 8 + j], iterations * expected) << "at " << i << "," << j;
    }
  return c;
}

TEST(EmuProfile, MmaLoopCountsItsTensorCoreFlops) {
  AccessCounts c = mmaProfile("mmaLoopPitch24", 5);
  EXPECT_EQ(c.tensorCoreFlops, 5u * 2 * 16 * 8 * 16);
  // Tile stores (8 + 4 requests), ldmatrix x4 (4 matrices) and x2 (2): all
  // conflict-free with 48-byte rows.
  EXPECT_EQ(c.sharedRequests, 18u);
  EXPECT_EQ(c.sharedWavefronts, 18u);
}

TEST(EmuProfile, LdmatrixOnThirtyTwoByteRowsConflictsTwoWays) {
  AccessCounts c = mmaProfile("mmaLoopPitch16", 1);
  EXPECT_EQ(c.tensorCoreFlops, 2u * 16 * 8 * 16);
  // Rows 32 bytes apart: row r and r+4 of a matrix share banks.
  EXPECT_EQ(c.sharedRequests, 18u);
  EXPECT_EQ(c.sharedWavefronts, 12u + 2 * 6);
}

AccessCounts wmmaProfile(const char *name) {
  auto wmmaTile = kernel<void (*)(const __half *, const __half *, float *)>(name);
  EXPECT_NE(wmmaTile, nullptr);
  Buffer a(16 * 16 * 2), b(16 * 16 * 2), d(16 * 16 * 4);
  std::vector<float> fa(256), fb(256);
  for (int e = 0; e < 256; ++e) {
    fa[e] = static_cast<float>((e * 7 + 3) % 5 - 2);
    fb[e] = static_cast<float>((e * 3 + 1) % 7 - 3);
    a.as<__half>()[e] = __float2half(fa[e]);
    b.as<__half>()[e] = __float2half(fb[e]);
  }
  AccessCounts c = profiled({1, 1, 1}, {32, 1, 1}, {a.range(), b.range(), d.range()},
                            [&] { wmmaTile(a.as<__half>(), b.as<__half>(), d.as<float>()); });
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float expected = 0;
      for (int k = 0; k < 16; ++k)
        expected += fa[i * 16 + k] * fb[k * 16 + j];
      EXPECT_EQ(d.as<float>()[i * 16 + j], expected) << "at " << i << "," << j;
    }
  return c;
}

TEST(EmuProfile, WmmaLoadsAndStoresCountAsTileAccesses) {
  AccessCounts c = wmmaProfile("wmmaTilePitch16");
  // Staging stores (16 requests) and copy-out loads (8), one wavefront
  // each; A and B loads 4 phases of 8 16-byte chunks each, the
  // accumulator's store 8: rows packed end to end conflict nowhere.
  EXPECT_EQ(c.sharedRequests, 16u + 4 + 4 + 8 + 8);
  EXPECT_EQ(c.sharedWavefronts, 16u + 4 + 4 + 8 + 8);
}

TEST(EmuProfile, WmmaLoadsOnFortyEightByteRowsConflictTwoWays) {
  AccessCounts c = wmmaProfile("wmmaTilePitch24");
  // Rows 48 bytes apart: a phase's rows 0 and 3 share banks 4-7.
  EXPECT_EQ(c.sharedRequests, 16u + 4 + 4 + 8 + 8);
  EXPECT_EQ(c.sharedWavefronts, 16u + 8 + 8 + 8 + 8);
}

TEST(EmuProfile, CpAsyncLandsAtTheWaitAndIsCounted) {
  auto copy = kernel<void (*)(const float *, float *, int)>("cpAsyncCopy");
  ASSERT_NE(copy, nullptr);
  Buffer in(2 * 128 * 4), out(2 * 128 * 4);
  for (int i = 0; i < 256; ++i)
    in.as<float>()[i] = static_cast<float>(i) + 0.25f;
  AccessCounts c = profiled({2, 1, 1}, {32, 1, 1}, {in.range(), out.range()},
                            [&] { copy(in.as<float>(), out.as<float>(), 1); });
  EXPECT_EQ(0, std::memcmp(in.data, out.data, 256 * 4));
  EXPECT_EQ(c.globalLoadRequests, 2u);
  EXPECT_DOUBLE_EQ(loadEfficiency(c), 1.0);
  // Per block: the 16-byte copies in 4 quarter-warp phases, 4 reads.
  EXPECT_EQ(c.sharedRequests, 2u * 8);
  EXPECT_EQ(c.sharedWavefronts, 2u * 8);
  // Without the wait, the block reads shared memory before the copy lands.
  LaunchOptions options;
  ASSERT_TRUE(launch({2, 1, 1}, {32, 1, 1}, 0, options,
                     [&] { copy(in.as<float>(), out.as<float>(), 0); })
                  .ok);
  EXPECT_TRUE(std::isnan(out.as<float>()[5]));
}

TEST(EmuProfile, SampledBlocksScaleToTheGrid) {
  auto copy = kernel<void (*)(const void *, void *)>("copyFloat4");
  ASSERT_NE(copy, nullptr);
  const int n = 64 * 128;
  Buffer in(n * 16), out(n * 16);
  std::memset(in.data, 0, n * 16);
  AccessCounts full = profiled({64, 1, 1}, {128, 1, 1}, {in.range(), out.range()},
                               [&] { copy(in.data, out.data); });
  AccessCounts sampled = profiled({64, 1, 1}, {128, 1, 1}, {in.range(), out.range()},
                                  [&] { copy(in.data, out.data); }, 8);
  EXPECT_EQ(sampled.blocksEmulated, 8u);
  EXPECT_EQ(sampled.blocksInGrid, 64u);
  EXPECT_EQ(sampled.globalLoadSectors, full.globalLoadSectors);
  EXPECT_EQ(sampled.globalStoreRequestedBytes, full.globalStoreRequestedBytes);
  EXPECT_EQ(sampled.dramBytes, full.dramBytes);
}

TEST(EmuProfile, AccessesOutsideTheGlobalRangesAreNotCounted) {
  auto strided = kernel<void (*)(const float *, float *)>("stridedRead");
  ASSERT_NE(strided, nullptr);
  Buffer in(128 * 32 * 4), out(128 * 4);
  std::memset(in.data, 0, in.bytes);
  // Only the output is declared: the reads are not global memory here.
  AccessCounts c = profiled({1, 1, 1}, {128, 1, 1}, {out.range()},
                            [&] { strided(in.as<float>(), out.as<float>()); });
  EXPECT_EQ(c.globalLoadRequests, 0u);
  EXPECT_EQ(c.globalStoreRequests, 4u);
}

} // namespace
#else
TEST(EmuProfile, NeedsClangAndTheCudaHeaders) {
  GTEST_SKIP() << "the profiled test kernels need clang and the CUDA toolkit's headers "
                  "(test/unit/CMakeLists.txt)";
}
#endif // KILN_PROFILE_KERNELS
