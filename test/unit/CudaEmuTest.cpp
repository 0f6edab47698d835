//===- CudaEmuTest.cpp - the CUDA emulator on hand-written kernels --------===//
//
// Correct kernels give the right answer in every scheduling order; kernels
// with planted bugs (test/unit/emu/TestKernels.cu) fail: a missing barrier
// gives a wrong answer in some order, a barrier not every thread reaches is
// a deadlock report naming the source lines, an out-of-range write traps.
//
//===----------------------------------------------------------------------===//

#include "kiln/CudaEmu/Emulator.h"

#if __has_include(<cuda_fp16.h>)
#include <cuda_fp16.h>
#define KILN_TEST_HAVE_HALF 1
#endif

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

// The kernels (plain C++ functions once cuda_emu.h is force-included).
void vectorAdd(const float *a, const float *b, float *c, int n);
void rowSum(const float *in, float *out, int columns);
void rowSumMissingBarrier(const float *in, float *out, int columns);
void rotate(const float *in, float *out);
void rotateMissingBarrier(const float *in, float *out);
void warpSum(const float *in, float *out);
void divergentBarrier(float *out);
void earlyReturnBeforeBarrier(const float *in, float *out, int n);
void writePastEnd(float *out, int n);
void sharedPastEnd(float *out);
void sharedBeforeStart(float *out);
void shuffleAfterExit(float *out);
void localPastEnd(float *out, int n);
void indexOverflow(float *out, int n);
void alignedAfterOddArray(unsigned *out);
#ifdef KILN_TEST_HAVE_HALF
void wmmaGemm(const __half *a, const __half *b, float *c, int m, int n, int k);
void wmmaReadBackMissingSync(const __half *a, const __half *b, float *c);
#endif

using namespace kiln::emu;

namespace {

std::vector<float> randomValues(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

LaunchOptions inOrder(Order order, uint64_t seed = 1) {
  LaunchOptions options;
  options.order = order;
  options.seed = seed;
  return options;
}

const Order kOrders[] = {Order::Forward, Order::Reverse, Order::Shuffled};

/// A copy of `values` in memory aligned as cudaMalloc aligns it (256
/// bytes): what wmma's loads and stores need of global memory.
template <typename T> class DeviceBuffer {
public:
  explicit DeviceBuffer(const std::vector<T> &values)
      : size_(values.size()),
        data_(static_cast<T *>(std::aligned_alloc(256, (sizeof(T) * size_ + 255) / 256 * 256))) {
    std::memcpy(data_, values.data(), sizeof(T) * size_);
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { std::free(data_); }
  T *data() { return data_; }
  std::vector<T> values() const { return std::vector<T>(data_, data_ + size_); }

private:
  size_t size_;
  T *data_;
};

TEST(CudaEmu, VectorAddWithGridStride) {
  const int n = 1000;
  auto a = randomValues(n, 1), b = randomValues(n, 2);
  std::vector<float> c(n, 0.0f);
  LaunchResult r = launchKernel(vectorAdd, {3}, {64}, 0, LaunchOptions{}, a.data(), b.data(),
                                c.data(), n);
  ASSERT_TRUE(r.ok) << r.error;
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(c[i], a[i] + b[i]) << i;
}

TEST(CudaEmu, SharedMemoryReductionIsRightInEveryOrder) {
  const int rows = 5, columns = 300;
  auto in = randomValues(rows * columns, 3);
  for (Order order : kOrders) {
    std::vector<float> out(rows, 0.0f);
    LaunchResult r = launchKernel(rowSum, {rows}, {128}, 0, inOrder(order), in.data(),
                                  out.data(), columns);
    ASSERT_TRUE(r.ok) << r.error;
    for (int i = 0; i < rows; ++i) {
      double expected = 0;
      for (int j = 0; j < columns; ++j)
        expected += in[i * columns + j];
      EXPECT_NEAR(out[i], expected, 1e-4 * (1 + std::fabs(expected))) << "row " << i;
    }
  }
}

TEST(CudaEmu, WarpShufflesSum) {
  auto in = randomValues(4 * 32, 4);
  std::vector<float> out(4, 0.0f);
  for (Order order : kOrders) {
    LaunchResult r = launchKernel(warpSum, {4}, {32}, 0, inOrder(order), in.data(), out.data());
    ASSERT_TRUE(r.ok) << r.error;
    for (int w = 0; w < 4; ++w) {
      double expected = 0;
      for (int k = 0; k < 32; ++k)
        expected += in[w * 32 + k];
      EXPECT_NEAR(out[w], expected, 1e-5) << "warp " << w;
    }
  }
}

/// True when `kernel` computes rowSum's answer under `order`.
bool rowSumRight(void (*kernel)(const float *, float *, int), Order order, uint64_t seed) {
  const int rows = 3, columns = 256;
  auto in = randomValues(rows * columns, 5);
  std::vector<float> out(rows, 0.0f);
  LaunchResult r = launchKernel(kernel, {rows}, {128}, 0, inOrder(order, seed), in.data(),
                                out.data(), columns);
  if (!r.ok)
    return false;
  for (int i = 0; i < rows; ++i) {
    double expected = 0;
    for (int j = 0; j < columns; ++j)
      expected += in[i * columns + j];
    if (!(std::fabs(out[i] - expected) <= 1e-4 * (1 + std::fabs(expected))))
      return false;
  }
  return true;
}

TEST(CudaEmu, MissingBarrierBeforeTreeIsExposed) {
  EXPECT_TRUE(rowSumRight(rowSum, Order::Forward, 1));
  // Warp 0 runs ahead to the first barrier and reads other warps' entries
  // before they are written: poison (NaN) gets in.
  EXPECT_FALSE(rowSumRight(rowSumMissingBarrier, Order::Forward, 1));
  int wrong = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed)
    wrong += !rowSumRight(rowSumMissingBarrier, Order::Shuffled, seed);
  EXPECT_GT(wrong, 0);
}

/// True when `kernel` rotates a block of 128 values under `order`.
bool rotateRight(void (*kernel)(const float *, float *), Order order) {
  auto in = randomValues(128, 6);
  std::vector<float> out(128, 0.0f);
  LaunchResult r = launchKernel(kernel, {1}, {128}, 0, inOrder(order), in.data(), out.data());
  if (!r.ok)
    return false;
  for (int t = 0; t < 128; ++t)
    if (out[t] != in[(t + 1) % 128])
      return false;
  return true;
}

TEST(CudaEmu, MissingBarrierBetweenReadAndWriteIsExposed) {
  for (Order order : kOrders)
    EXPECT_TRUE(rotateRight(rotate, order));
  // Forward order happens to be right; in reverse, a warp overwrites the
  // entries the warp before it has not read yet.
  EXPECT_FALSE(rotateRight(rotateMissingBarrier, Order::Reverse));
}

// A shared array ends at its trailing guard page; what lies between the
// leading one and its start is filled, and a write there fails the launch
// in checked mode (the halo convolution kernel's underrun was one).
TEST(CudaEmu, SharedArrayUnderrunFailsTheLaunchInCheckedMode) {
  std::vector<float> out(32, 0.0f);
  LaunchOptions options;
  options.checked = true;
  LaunchResult r = launchKernel(sharedBeforeStart, {1}, {32}, 0, options, out.data());
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.error, "block (0, 0, 0): out-of-bounds write to 'shared array at "
                     "TestKernels.cu:201' (128 bytes) 4 bytes before its start");
}

TEST(CudaEmu, DivergentBarrierIsADeadlockReport) {
  std::vector<float> out(32, 0.0f);
  LaunchResult r = launchKernel(divergentBarrier, {1}, {32}, 0, LaunchOptions{}, out.data());
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.error, "block (0, 0, 0): deadlock: not every thread of the block reaches "
                     "__syncthreads: threads 0..15 wait at __syncthreads (TestKernels.cu:89); "
                     "threads 16..31 exited");
}

TEST(CudaEmu, EarlyReturnBeforeBarrierIsADeadlockReport) {
  std::vector<float> in(64, 1.0f), out(64, 0.0f);
  LaunchResult r = launchKernel(earlyReturnBeforeBarrier, {1}, {64}, 0, LaunchOptions{},
                                in.data(), out.data(), 40);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("threads 0..39 wait at __syncthreads (TestKernels.cu:99); threads "
                         "40..63 exited"),
            std::string::npos)
      << r.error;
}

TEST(CudaEmu, ShuffleFromALaneOutsideTheMaskIsReported) {
  std::vector<float> out(32, 0.0f);
  LaunchResult r = launchKernel(shuffleAfterExit, {1}, {32}, 0, LaunchOptions{}, out.data());
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.error, "block (0, 0, 0): __shfl_down_sync (TestKernels.cu:121): lane 30 reads "
                     "lane 31, which is not in the mask");
}

TEST(CudaEmu, RejectsBadLaunchShapes) {
  std::vector<float> out(1);
  EXPECT_FALSE(launchKernel(divergentBarrier, {1}, {2048}, 0, LaunchOptions{}, out.data()).ok);
  EXPECT_FALSE(launchKernel(divergentBarrier, {0}, {32}, 0, LaunchOptions{}, out.data()).ok);
}

TEST(CudaEmu, AStackThatCannotBeMappedIsAnError) {
  // What running out of maps (256 streams each launching 256 threads) looks
  // like to the emulator, without spending them: a stack larger than the
  // address space. The launch fails with a reason; it used to abort.
  LaunchOptions options;
  options.stackBytes = size_t(1) << 60;
  std::vector<float> out(1);
  LaunchResult result = launchKernel(divergentBarrier, {1}, {32}, 0, options, out.data());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("cannot map a stack for emulated thread 0 of 32"), std::string::npos)
      << result.error;
}

#ifdef KILN_TEST_HAVE_HALF
/// Random f16 values (exactly representable) and their float copies.
std::vector<__half> randomHalves(size_t n, unsigned seed, std::vector<float> &asFloat) {
  std::vector<float> v = randomValues(n, seed);
  std::vector<__half> h(n);
  asFloat.resize(n);
  for (size_t i = 0; i < n; ++i) {
    h[i] = __float2half(v[i]);
    asFloat[i] = __half2float(h[i]);
  }
  return h;
}

TEST(CudaEmu, WmmaGemmMatchesTheReference) {
  const int m = 32, n = 48, k = 64;
  std::vector<float> af, bf;
  auto a = randomHalves(m * k, 8, af), b = randomHalves(k * n, 9, bf);
  DeviceBuffer<__half> da(a), db(b);
  for (Order order : kOrders) {
    DeviceBuffer<float> dc(std::vector<float>(m * n, 0.0f));
    LaunchResult r = launchKernel(wmmaGemm, {n / 16, m / 16}, {32}, 0, inOrder(order), da.data(),
                                  db.data(), dc.data(), m, n, k);
    ASSERT_TRUE(r.ok) << r.error;
    std::vector<float> c = dc.values();
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double expected = 0;
        for (int l = 0; l < k; ++l)
          expected += double(af[i * k + l]) * bf[l * n + j];
        ASSERT_NEAR(c[i * n + j], expected, 1e-4) << i << "," << j;
      }
  }
}

TEST(CudaEmu, WmmaReadBackWithoutSyncIsExposed) {
  std::vector<float> af, bf;
  auto a = randomHalves(256, 10, af), b = randomHalves(256, 11, bf);
  DeviceBuffer<__half> da(a), db(b);
  DeviceBuffer<float> dc(std::vector<float>(256, 0.0f));
  LaunchResult r = launchKernel(wmmaReadBackMissingSync, {1}, {32}, 0, inOrder(Order::Forward),
                                da.data(), db.data(), dc.data());
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> c = dc.values();
  // Lane 0 reads element 1, which lane 1 has not stored yet: poison (NaN).
  EXPECT_TRUE(std::isnan(c[0]));
}

TEST(CudaEmu, WmmaOnAMisalignedPointerFailsTheLaunch) {
  std::vector<float> af, bf;
  auto a = randomHalves(16 * 17, 12, af), b = randomHalves(16 * 16, 13, bf);
  DeviceBuffer<__half> da(a), db(b);
  DeviceBuffer<float> dc(std::vector<float>(256, 0.0f));
  // One element in: 2 bytes past a 32-byte boundary, as on a GPU it would be
  // an undefined result.
  LaunchResult r = launchKernel(wmmaGemm, {1, 1}, {32}, 0, LaunchOptions{}, da.data() + 1,
                                db.data(), dc.data(), 16, 16, 16);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("wmma::load_matrix_sync on a pointer that is not 32-byte aligned (2 "
                         "bytes past a 32-byte boundary)"),
            std::string::npos)
      << r.error;
}
#endif // KILN_TEST_HAVE_HALF

TEST(CudaEmu, AlignedSharedArraysAreAlignedInEveryMode) {
  for (bool checked : {false, true}) {
    LaunchOptions options;
    options.checked = checked;
    std::vector<unsigned> misalignment(32, 99);
    LaunchResult r = launchKernel(alignedAfterOddArray, {2}, {32}, 0, options, misalignment.data());
    ASSERT_TRUE(r.ok) << r.error;
    for (unsigned m : misalignment)
      EXPECT_EQ(m, 0u) << (checked ? "checked" : "default");
  }
}

using CudaEmuDeathTest = ::testing::Test;

TEST(CudaEmuDeathTest, WritePastTheEndOfAGuardedBufferTraps) {
  EXPECT_EXIT(
      {
        auto *out = static_cast<float *>(allocateGuarded(32 * sizeof(float), "out"));
        launchKernel(writePastEnd, {1}, {64}, 0, LaunchOptions{}, out, 32);
      },
      ::testing::ExitedWithCode(70),
      "out-of-bounds access to 'out' \\(128 bytes\\) at byte offset 128, by thread \\(32,0,0\\)");
}

TEST(CudaEmuDeathTest, SharedArrayOverrunTrapsInCheckedMode) {
  EXPECT_EXIT(
      {
        std::vector<float> out(32);
        LaunchOptions options;
        options.checked = true;
        launchKernel(sharedPastEnd, {1}, {32}, 0, options, out.data());
      },
      ::testing::ExitedWithCode(70),
      "out-of-bounds access to 'shared array at TestKernels.cu:111' \\(128 bytes\\) at byte "
      "offset 128, by thread \\(31,0,0\\)");
}

// Under the sanitizer builds (scripts/test --sanitize) the kernels run
// instrumented on the emulator's fiber stacks, as `kilnc --emu-sanitize`
// builds generated ones: ASan and UBSan must see their bugs there.
#if defined(KILN_SANITIZE_ADDRESS)
TEST(CudaEmuDeathTest, StackOverrunOnAFiberIsAnAsanReport) {
  std::vector<float> out(32);
  // Every thread's right-sized loop runs clean first (no false report from
  // frames on switched stacks); thread 5 then writes past its array.
  launchKernel(localPastEnd, {1}, {32}, 0, LaunchOptions{}, out.data(), 99);
  EXPECT_EQ(out[6], 2.0f);
  EXPECT_DEATH(launchKernel(localPastEnd, {1}, {32}, 0, LaunchOptions{}, out.data(), 5),
               "stack-buffer-overflow");
}
#endif

#if defined(KILN_SANITIZE_UNDEFINED)
TEST(CudaEmuDeathTest, SignedOverflowInAKernelIsAUbsanReport) {
  std::vector<float> out(32);
  launchKernel(indexOverflow, {1}, {32}, 0, LaunchOptions{}, out.data(), 1000);
  EXPECT_EQ(out[3], static_cast<float>(3000 % 7));
  EXPECT_DEATH(launchKernel(indexOverflow, {1}, {32}, 0, LaunchOptions{}, out.data(), 1 << 30),
               "signed integer overflow");
}
#endif

} // namespace
