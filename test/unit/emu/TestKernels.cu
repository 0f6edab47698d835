// Kernels for the cuda-emu tests, written as for NVRTC. Built by the host
// compiler with kiln/CudaEmu/cuda_emu.h force-included. Some carry planted
// bugs (named so) that the emulator must turn into failures.

#ifndef KILN_SHARED
#define KILN_SHARED(T, name, count) __shared__ T name[count]
#endif

__global__ void vectorAdd(const float *a, const float *b, float *c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    c[i] = a[i] + b[i];
}

// One block per row: the row's sum by a shared-memory tree (blockDim.x a
// power of two, at most 256).
__global__ void rowSum(const float *in, float *out, int columns) {
  KILN_SHARED(float, partial, 256);
  const float *row = in + blockIdx.x * columns;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < columns; c += blockDim.x)
    sum += row[c];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = partial[0];
}

// Planted bug: no barrier between writing `partial` and the tree reading
// other warps' entries.
__global__ void rowSumMissingBarrier(const float *in, float *out, int columns) {
  KILN_SHARED(float, partial, 256);
  const float *row = in + blockIdx.x * columns;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < columns; c += blockDim.x)
    sum += row[c];
  partial[threadIdx.x] = sum;
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = partial[0];
}

// Rotates a block's values through shared memory: out[i] = in[(i + 1) % n].
__global__ void rotate(const float *in, float *out) {
  KILN_SHARED(float, tile, 128);
  unsigned t = threadIdx.x, n = blockDim.x;
  tile[t] = in[t];
  __syncthreads();
  float next = tile[(t + 1) % n];
  __syncthreads();
  tile[t] = next;
  __syncthreads();
  out[t] = tile[t];
}

// Planted bug: the barrier between reading a neighbour and overwriting the
// tile is missing (a write-after-read race).
__global__ void rotateMissingBarrier(const float *in, float *out) {
  KILN_SHARED(float, tile, 128);
  unsigned t = threadIdx.x, n = blockDim.x;
  tile[t] = in[t];
  __syncthreads();
  float next = tile[(t + 1) % n];
  tile[t] = next;
  __syncthreads();
  out[t] = tile[t];
}

// A warp's sum by butterfly shuffles; lane 0 writes it.
__global__ void warpSum(const float *in, float *out) {
  float v = in[blockIdx.x * 32 + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x == 0)
    out[blockIdx.x] = v;
}

// Planted bug: only half the block reaches the barrier.
__global__ void divergentBarrier(float *out) {
  if (threadIdx.x < 16)
    __syncthreads();
  out[threadIdx.x] = 1.0f;
}

// Planted bug: out-of-range threads return before a barrier the others wait at.
__global__ void earlyReturnBeforeBarrier(const float *in, float *out, int n) {
  KILN_SHARED(float, tile, 64);
  if ((int)threadIdx.x >= n)
    return;
  tile[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % n];
}

// Planted bug: writes one element past the end of `out`.
__global__ void writePastEnd(float *out, int n) {
  if ((int)threadIdx.x <= n)
    out[threadIdx.x] = 2.0f;
}

// Planted bug: indexes the shared tile one past its end.
__global__ void sharedPastEnd(float *out) {
  KILN_SHARED(float, tile, 32);
  tile[threadIdx.x + 1] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x];
}

// Planted bug: lane 31 leaves before the warp's shuffle.
__global__ void shuffleAfterExit(float *out) {
  if (threadIdx.x == 31)
    return;
  out[threadIdx.x] = __shfl_down_sync(0x7fffffffu, 1.0f, 1);
}

// The Tensor Core kernels need the toolkit's half type (for NVRTC and for
// the emulator alike).
#if __has_include(<cuda_fp16.h>)
#include <cuda_fp16.h>
#include <mma.h>

// One warp per 16x16 tile of C = A B (f16 in, f32 accumulate), M, N and K
// multiples of 16, all row-major.
__global__ void wmmaGemm(const __half *a, const __half *b, float *c, int m, int n, int k) {
  using namespace nvcuda;
  const int tileRow = blockIdx.y * 16, tileCol = blockIdx.x * 16;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < k; k0 += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, a + tileRow * k + k0, k);
    wmma::load_matrix_sync(fb, b + k0 * n + tileCol, n);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + tileRow * n + tileCol, acc, n, wmma::mem_row_major);
}

// Planted bug: each lane reads back the whole stored tile (to scale it)
// without a __syncwarp after the store, so it reads other lanes' elements
// that may not be written yet.
__global__ void wmmaReadBackMissingSync(const __half *a, const __half *b, float *c) {
  using namespace nvcuda;
  KILN_SHARED(float, tile, 256);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(tile, acc, 16, wmma::mem_row_major);
  for (int e = threadIdx.x; e < 256; e += 32)
    c[e] = 2.0f * tile[(e + 1) % 256];
}
#endif

// Planted bug for AddressSanitizer: thread `n` writes its local array one
// past the end, on its fiber's stack (through a pointer, which UBSan's
// array-bounds check does not follow).
__global__ void localPastEnd(float *out, int n) {
  float partial[4];
  float *slot = partial;
  int last = threadIdx.x == (unsigned)n ? 4 : 3;
  for (int k = 0; k <= last; ++k)
    slot[k] = (float)k;
  out[threadIdx.x] = partial[threadIdx.x % 4];
}

// Planted bug for UndefinedBehaviorSanitizer: the index arithmetic
// overflows a signed int in the threads past `n`.
__global__ void indexOverflow(float *out, int n) {
  int scaled = (int)threadIdx.x * n;
  out[threadIdx.x] = (float)(scaled % 7);
}

// (Defined here, not at the top, so that the lines the tests name stay put.)
#ifndef KILN_SHARED_ALIGNED
#define KILN_SHARED_ALIGNED(T, name, count, align) __shared__ __align__(align) T name[count]
#endif

// A 32-byte aligned tile declared after an array that ends off a 32-byte
// boundary: each thread reports how far its address is past one.
__global__ void alignedAfterOddArray(unsigned *out) {
  KILN_SHARED(float, odd, 3);
  KILN_SHARED_ALIGNED(float, tile, 64, 32);
  odd[0] = 0.0f;
  out[threadIdx.x] = (unsigned)(reinterpret_cast<unsigned long long>(tile) % 32);
}

// Planted bug: thread 0 writes the element before the shared tile.
__global__ void sharedBeforeStart(float *out) {
  KILN_SHARED(float, tile, 32);
  tile[(int)threadIdx.x - 1] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x];
}
