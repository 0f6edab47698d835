//===- HostGemm.h - single-precision matrix products on the CPU -*- C++ -*-===//
//
// Every f32 GEMM the runtime computes on the host (the CPU backend's
// matmuls and im2col convolutions, cuBLASLt calls run on the host) goes
// through here: oneDNN's sgemm, which picks its kernels from the CPU's
// features (OpenBLAS 0.3.21 picks them from a table of CPU models and fell
// back to its SSE3 kernels on a CPU it did not know: docs/performance.md).
// oneDNN runs on OpenMP's pool at the host's thread count (HostThreads.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_HOSTGEMM_H
#define KILN_LIB_RUNTIME_HOSTGEMM_H

#include <cstdint>

namespace kiln {
namespace rt {

/// C = alpha op(A) op(B) + beta C, row-major; op transposes when asked.
/// m, n or k may be 0, as in BLAS (k = 0 leaves beta C).
void hostSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc);

/// hostSgemmDeterministic's tiles of C: rows and columns.
inline constexpr int64_t kDeterministicTileRows = 64, kDeterministicTileCols = 256;

/// The same with results that do not depend on the thread count (kilnc
/// --deterministic): C in fixed tiles of rows and columns, each one
/// single-threaded sgemm over all of K, the tiles spread over the threads.
/// (oneDNN's sgemm may split a long K over threads, and how depends on
/// their count.)
void hostSgemmDeterministic(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                            float alpha, const float *a, int64_t lda, const float *b,
                            int64_t ldb, float beta, float *c, int64_t ldc);

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_HOSTGEMM_H
