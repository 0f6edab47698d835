//===- cuda_emu.h - CUDA kernel text on the host compiler -------*- C++ -*-===//
//
// Force-included (g++ -include kiln/CudaEmu/cuda_emu.h) when kernel text
// written for NVRTC is compiled for cuda-emu. It supplies what the kernel
// text uses from CUDA: qualifiers, thread and block indices, barriers, warp
// shuffles and votes, shared memory, atomics and the math intrinsics. Each
// barrier and collective records its source line, so the emulator's
// reports point into the kernel.
//
// Warp matrix instructions: the kernel text calls kiln_cp_async_16,
// kiln_ldmatrix_*, kiln_mma_m16n8k16_* and kiln_load_vec/kiln_store_vec,
// which the GPU build defines in the device prelude the emitters write
// (inline PTX; plain vector accesses for kiln_load_vec/kiln_store_vec),
// under #ifndef KILN_CUDA_EMU, and this header emulates: ldmatrix
// and mma as warp collectives with the PTX ISA's fragment layouts, cp.async
// as a copy that lands when cp.async.wait_group says so.
//
// Shared memory: kiln's kernels declare it with KILN_SHARED(T, name, count)
// (on the GPU: __shared__ T name[count]), or KILN_SHARED_ALIGNED(T, name,
// count, align) for a stricter alignment (wmma's 32 bytes), so the emulator
// can poison and bound it; a plain `__shared__` array also works but is
// neither poisoned nor checked.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDAEMU_CUDA_EMU_H
#define KILN_CUDAEMU_CUDA_EMU_H

/// Kernel text tells the emulation from NVRTC by this.
#define KILN_CUDA_EMU 1

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// With the CUDA toolkit's headers on the include path, __half and
// __nv_bfloat16 are the toolkit's own (they compile on the host). Those
// headers define the qualifiers as nothing for a host compiler, so this
// header redefines them below, after including them.
#if __has_include(<cuda_fp16.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_functions.h>
#include <vector_types.h>
#define KILN_EMU_HAVE_CUDA_HEADERS 1
#endif

namespace kiln {
namespace emu {

#ifdef KILN_EMU_HAVE_CUDA_HEADERS
using ::dim3;
using ::uint3;
#else
struct uint3 {
  unsigned x, y, z;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};
#endif

// Set by the scheduler before it resumes each thread's fiber.
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;

enum class Collective : int {
  SyncWarp, ShflIdx, ShflXor, ShflDown, ShflUp, Any, All, Ballot, LdMatrix, Mma
};

void syncThreads(const char *file, int line);
/// Waits until every lane of `mask` arrives at the same collective; returns
/// this lane's result (the shuffled bits, or the vote).
uint64_t warpCollective(Collective kind, unsigned mask, uint64_t value, int param, int width,
                        const char *file, int line);
void *sharedArray(size_t bytes, size_t align, const char *file, int line);
/// What the hardware requires of a wmma load or store: a 32-byte aligned
/// pointer and a leading dimension of whole 16-byte units. A kernel that
/// breaks it gets undefined results on a GPU; here its launch fails.
void checkWmmaMatrix(const void *p, size_t ldmBytes, const char *call);
void *sharedDynamic(const char *file, int line);

/// Profiling (Profile.h): one lane's access of `bytes` at `address` by the
/// instruction at `site`; nothing unless the launch is profiled.
void traceAccess(const void *site, const void *address, unsigned bytes, bool store);
/// A wmma load or store of a tile of `rows` rows of `rowBytes` bytes, rows
/// `ldmBytes` apart, by the calling warp (one lane calls it): counted as
/// 16-byte accesses, 8 a shared-memory phase, as ldmatrix's; nothing unless
/// the launch is profiled and the tile is in shared memory.
void traceWmmaTile(const void *tile, size_t ldmBytes, int rows, int rowBytes);
/// cp.async of `bytes` (4, 8 or 16): the source is read now, the
/// destination written when a cp.async.wait_group retires its group.
void cpAsync(void *shared, const void *global, unsigned bytes, const void *site);
void cpAsyncCommit();
void cpAsyncWait(int pendingGroups);
/// ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16: this lane gives
/// the address of one row and gets `count` registers.
void ldMatrix(unsigned *registers, int count, bool trans, const void *row, const char *file,
              int line);
/// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: d += a * b, with this
/// lane's fragment registers.
void mmaM16N8K16(float *d, const unsigned *a, const unsigned *b, bool bf16, const char *file,
                 int line);
/// Tensor Core work of a wmma operation, once per warp.
void countTensorCoreFlops(uint64_t flops);

template <typename T>
T shuffle(Collective kind, unsigned mask, T value, int param, int width, const char *file,
          int line) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "shuffles move values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = warpCollective(kind, mask, bits, param, width, file, line);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

} // namespace emu
} // namespace kiln

#ifndef KILN_EMU_HAVE_CUDA_HEADERS
using kiln::emu::dim3;
using kiln::emu::float4;
using kiln::emu::make_float4;
using kiln::emu::uint3;
#endif
using kiln::emu::blockDim;
using kiln::emu::blockIdx;
using kiln::emu::gridDim;
using kiln::emu::threadIdx;

#define warpSize 32

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __noinline__
#undef __restrict__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static thread_local

#define KILN_SHARED(T, name, count)                                                           \
  T *name = static_cast<T *>(                                                                  \
      ::kiln::emu::sharedArray(sizeof(T) * (count), alignof(T), __FILE__, __LINE__))
#define KILN_SHARED_ALIGNED(T, name, count, align)                                            \
  T *name = static_cast<T *>(                                                                  \
      ::kiln::emu::sharedArray(sizeof(T) * (count),                                             \
                               (align) > alignof(T) ? (align) : alignof(T), __FILE__, __LINE__))
#define KILN_DYNAMIC_SHARED(T, name)                                                           \
  T *name = static_cast<T *>(::kiln::emu::sharedDynamic(__FILE__, __LINE__))

#define __syncthreads() ::kiln::emu::syncThreads(__FILE__, __LINE__)
#define __syncwarp(...)                                                                        \
  ((void)::kiln::emu::warpCollective(::kiln::emu::Collective::SyncWarp,                      \
                                     KILN_EMU_MASK(__VA_ARGS__), 0, 0, 32, __FILE__, __LINE__))
#define KILN_EMU_MASK(...) KILN_EMU_MASK_(__VA_ARGS__ + 0, 0xffffffffu)
#define KILN_EMU_MASK_(m, full) ((m) ? (unsigned)(m) : full)

#define KILN_EMU_SHFL(kind, mask, value, param, ...)                                          \
  ::kiln::emu::shuffle(::kiln::emu::Collective::kind, (mask), (value), (param),               \
                       KILN_EMU_WIDTH(__VA_ARGS__), __FILE__, __LINE__)
#define KILN_EMU_WIDTH(...) KILN_EMU_WIDTH_(__VA_ARGS__ + 0)
#define KILN_EMU_WIDTH_(w) ((w) ? (w) : 32)
#define __shfl_sync(mask, value, lane, ...) KILN_EMU_SHFL(ShflIdx, mask, value, lane, __VA_ARGS__)
#define __shfl_xor_sync(mask, value, laneMask, ...)                                          \
  KILN_EMU_SHFL(ShflXor, mask, value, laneMask, __VA_ARGS__)
#define __shfl_down_sync(mask, value, delta, ...)                                            \
  KILN_EMU_SHFL(ShflDown, mask, value, delta, __VA_ARGS__)
#define __shfl_up_sync(mask, value, delta, ...) KILN_EMU_SHFL(ShflUp, mask, value, delta, __VA_ARGS__)
#define __any_sync(mask, pred)                                                                 \
  ((int)::kiln::emu::warpCollective(::kiln::emu::Collective::Any, (mask), (pred) != 0, 0, 32,  \
                                    __FILE__, __LINE__))
#define __all_sync(mask, pred)                                                                 \
  ((int)::kiln::emu::warpCollective(::kiln::emu::Collective::All, (mask), (pred) != 0, 0, 32,  \
                                    __FILE__, __LINE__))
#define __ballot_sync(mask, pred)                                                              \
  ((unsigned)::kiln::emu::warpCollective(::kiln::emu::Collective::Ballot, (mask), (pred) != 0, \
                                         0, 32, __FILE__, __LINE__))

// Math intrinsics: the host's functions (not bit-exact with the GPU's).
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __int_as_float(int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
inline double __longlong_as_double(long long bits) {
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
// expf, tanhf, erff, fmaxf, ... come from <cmath> (math.h) unchanged.

// Atomics: blocks may one day run on several OS threads.
template <typename T> T atomicAdd(T *address, T value) {
  return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
}
inline float atomicAdd(float *address, float value) {
  float old = *address, desired;
  do {
    desired = old + value;
  } while (!__atomic_compare_exchange(address, &old, &desired, false, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED));
  return old;
}
template <typename T> T atomicMax(T *address, T value) {
  T old = *address;
  while (old < value &&
         !__atomic_compare_exchange(address, &old, &value, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
  }
  return old;
}

// Not instrumented: what these count is counted once, in the emulator.
#ifndef __align__
#define __align__(n) alignas(n)
#endif

#if defined(__clang__)
#define KILN_EMU_UNTRACED __attribute__((noinline, no_sanitize("coverage")))
#else
#define KILN_EMU_UNTRACED __attribute__((noinline))
#endif

template <typename V> KILN_EMU_UNTRACED V kiln_load_vec(const void *p) {
  ::kiln::emu::traceAccess(__builtin_return_address(0), p, sizeof(V), false);
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V> KILN_EMU_UNTRACED void kiln_store_vec(void *p, const V &v) {
  ::kiln::emu::traceAccess(__builtin_return_address(0), p, sizeof(V), true);
  std::memcpy(p, &v, sizeof(V));
}
KILN_EMU_UNTRACED inline void kiln_cp_async_16(void *shared, const void *global) {
  ::kiln::emu::cpAsync(shared, global, 16, __builtin_return_address(0));
}
inline void kiln_cp_async_commit() { ::kiln::emu::cpAsyncCommit(); }
template <int N> inline void kiln_cp_async_wait() { ::kiln::emu::cpAsyncWait(N); }
#define kiln_ldmatrix_x4(r, p) ::kiln::emu::ldMatrix((r), 4, false, (p), __FILE__, __LINE__)
#define kiln_ldmatrix_x4_trans(r, p) ::kiln::emu::ldMatrix((r), 4, true, (p), __FILE__, __LINE__)
#define kiln_ldmatrix_x2_trans(r, p) ::kiln::emu::ldMatrix((r), 2, true, (p), __FILE__, __LINE__)
#define kiln_mma_m16n8k16_f16(d, a, b)                                                         \
  ::kiln::emu::mmaM16N8K16((d), (a), (b), false, __FILE__, __LINE__)
#define kiln_mma_m16n8k16_bf16(d, a, b)                                                        \
  ::kiln::emu::mmaM16N8K16((d), (a), (b), true, __FILE__, __LINE__)

#include "Wmma.h"

#endif // KILN_CUDAEMU_CUDA_EMU_H
