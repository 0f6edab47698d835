// Hand-written kernels with known profiles (test/unit/EmuProfileTest.cpp).
// Built by clang with loads and stores traced, as kilnc --emu-profile
// builds a model's kernels, and loaded by the test with dlopen. NvrtcTest
// compiles them for sm_80 and sm_90 after the device prelude.

#include <cuda_fp16.h>
#ifndef KILN_CUDA_EMU // cuda-emu's wmma comes with its header
#include <mma.h>
#endif

#ifndef KILN_SHARED // NVRTC (NvrtcTest): the prelude comes first
#define KILN_SHARED(T, name, count) __shared__ T name[count]
#define KILN_SHARED_ALIGNED(T, name, count, align) __shared__ __align__(align) T name[count]
#endif

/// Every lane moves 16 bytes: each warp request covers 512 contiguous bytes.
extern "C" __global__ void copyFloat4(const float4 *in, float4 *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  kiln_store_vec(out + i, kiln_load_vec<float4>(in + i));
}

/// Lanes read floats 32 apart: every lane its own sector (1/8 useful).
extern "C" __global__ void stridedRead(const float *in, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i * 32];
}

/// A 32x32 transpose through shared memory, one block of 32x32 threads;
/// `pitch` 32 puts a column in one bank (32-way conflicts), 33 spreads it.
template <int pitch> __device__ void transposeTile(const float *in, float *out) {
  KILN_SHARED(float, tile, 32 * pitch);
  unsigned x = threadIdx.x, y = threadIdx.y;
  tile[y * pitch + x] = in[y * 32 + x];
  __syncthreads();
  out[y * 32 + x] = tile[x * pitch + y];
}
extern "C" __global__ void transposeNaive(const float *in, float *out) {
  transposeTile<32>(in, out);
}
extern "C" __global__ void transposePadded(const float *in, float *out) {
  transposeTile<33>(in, out);
}

/// One warp: A (16x16, row-major halves) and B (16x8, row-major [k][n])
/// through shared memory with rows `pitch` halves apart, fragments by
/// ldmatrix (B transposed), then `iterations` mma.sync: D = iterations * A B.
template <int pitch> __device__ void mmaLoop(const __half *a, const __half *b, float *d,
                                             int iterations) {
  KILN_SHARED_ALIGNED(__half, tileA, 16 * pitch, 16);
  KILN_SHARED_ALIGNED(__half, tileB, 16 * pitch, 16);
  unsigned lane = threadIdx.x;
  for (unsigned e = lane; e < 16 * 16; e += 32)
    tileA[e / 16 * pitch + e % 16] = a[e];
  for (unsigned e = lane; e < 16 * 8; e += 32)
    tileB[e / 8 * pitch + e % 8] = b[e];
  __syncwarp();
  unsigned fa[4], fb[2];
  kiln_ldmatrix_x4(fa, tileA + (lane % 16) * pitch + (lane / 16) * 8);
  kiln_ldmatrix_x2_trans(fb, tileB + (lane % 16) * pitch);
  float acc[4] = {0, 0, 0, 0};
  for (int k = 0; k < iterations; ++k)
    kiln_mma_m16n8k16_f16(acc, fa, fb);
  unsigned g = lane / 4, c = 2 * (lane % 4);
  d[g * 8 + c] = acc[0];
  d[g * 8 + c + 1] = acc[1];
  d[(g + 8) * 8 + c] = acc[2];
  d[(g + 8) * 8 + c + 1] = acc[3];
}
extern "C" __global__ void mmaLoopPitch16(const __half *a, const __half *b, float *d, int n) {
  mmaLoop<16>(a, b, d, n);
}
extern "C" __global__ void mmaLoopPitch24(const __half *a, const __half *b, float *d, int n) {
  mmaLoop<24>(a, b, d, n);
}

/// 128 floats per block through shared memory by cp.async; with `wait`
/// false the copy has not landed when the block reads it back.
extern "C" __global__ void cpAsyncCopy(const float *in, float *out, int wait) {
  KILN_SHARED_ALIGNED(float, staged, 128, 16);
  unsigned t = threadIdx.x; // 32 threads, 16 bytes each
  kiln_cp_async_16(staged + 4 * t, in + blockIdx.x * 128 + 4 * t);
  kiln_cp_async_commit();
  if (wait)
    kiln_cp_async_wait<0>();
  __syncthreads();
  for (unsigned e = t; e < 128; e += 32)
    out[blockIdx.x * 128 + e] = staged[e];
}

/// One warp: A (16x16 halves, row-major) and B (16x16, row-major [k][n])
/// staged in shared memory with rows `pitch` halves apart, wmma fragments,
/// one mma_sync, the accumulator stored to shared memory (rows of 16
/// floats) and copied out: D = A B. Profiled, each wmma load and store is
/// the warp's one tile access.
template <int pitch> __device__ void wmmaTile(const __half *a, const __half *b, float *d) {
  using namespace nvcuda;
  KILN_SHARED_ALIGNED(__half, tileA, 16 * pitch, 32);
  KILN_SHARED_ALIGNED(__half, tileB, 16 * pitch, 32);
  KILN_SHARED_ALIGNED(float, tileC, 16 * 16, 32);
  unsigned lane = threadIdx.x;
  for (unsigned e = lane; e < 16 * 16; e += 32) {
    tileA[e / 16 * pitch + e % 16] = a[e];
    tileB[e / 16 * pitch + e % 16] = b[e];
  }
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, tileA, pitch);
  wmma::load_matrix_sync(fb, tileB, pitch);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(tileC, fc, 16, wmma::mem_row_major);
  __syncwarp();
  for (unsigned e = lane; e < 16 * 16; e += 32)
    d[e] = tileC[e];
}
extern "C" __global__ void wmmaTilePitch16(const __half *a, const __half *b, float *d) {
  wmmaTile<16>(a, b, d);
}
extern "C" __global__ void wmmaTilePitch24(const __half *a, const __half *b, float *d) {
  wmmaTile<24>(a, b, d);
}
