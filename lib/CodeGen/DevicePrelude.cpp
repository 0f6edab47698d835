//===- DevicePrelude.cpp - device functions generated kernels share ------===//

#include "kiln/CodeGen/DevicePrelude.h"

namespace kiln {
namespace codegen {

const char *devicePrelude() {
  return R"cuda(#ifndef KILN_WARP_MATRIX_PRELUDE
#define KILN_WARP_MATRIX_PRELUDE
/// Two adjacent elements, stored as one access.
template <typename T> struct __align__(2 * sizeof(T)) kiln_pair {
  T lo, hi;
};
#ifndef KILN_CUDA_EMU
// Warp-level matrix instructions (sm_80+), the same names cuda-emu emulates.
__device__ __forceinline__ unsigned kiln_shared_address(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
/// 16 bytes global -> shared, bypassing registers (and L1).
__device__ __forceinline__ void kiln_cp_async_16(void *shared, const void *global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(kiln_shared_address(shared)),
               "l"(global)
               : "memory");
}
__device__ __forceinline__ void kiln_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
/// Waits until at most N committed groups are still in flight.
template <int N> __device__ __forceinline__ void kiln_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void kiln_ldmatrix_x4(unsigned (&r)[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(kiln_shared_address(row))
               : "memory"); // reads shared memory the compiler must not reorder around
}
__device__ __forceinline__ void kiln_ldmatrix_x4_trans(unsigned (&r)[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(kiln_shared_address(row))
               : "memory"); // reads shared memory the compiler must not reorder around
}
__device__ __forceinline__ void kiln_ldmatrix_x2_trans(unsigned (&r)[2], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(kiln_shared_address(row))
               : "memory"); // reads shared memory the compiler must not reorder around
}
/// d += a * b: a 16x16 (row), b 16x8 (col), d 16x8 in f32.
__device__ __forceinline__ void kiln_mma_m16n8k16_f16(float (&d)[4], const unsigned (&a)[4],
                                                      const unsigned (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void kiln_mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4],
                                                       const unsigned (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/// One vector access (8 or 16 bytes; the address aligned to its size).
template <typename V> __device__ __forceinline__ V kiln_load_vec(const void *p) {
  return *static_cast<const V *>(p);
}
template <typename V> __device__ __forceinline__ void kiln_store_vec(void *p, const V &v) {
  *static_cast<V *>(p) = v;
}
#endif // KILN_CUDA_EMU
#endif // KILN_WARP_MATRIX_PRELUDE
)cuda";
}

} // namespace codegen
} // namespace kiln
