//===- HostGemm.cpp - single-precision matrix products on the CPU ---------===//

#include "HostGemm.h"

#include "HostThreads.h"

#include "kiln/Reference/Kernels.h"

#include <dnnl.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>

namespace kiln {
namespace rt {

namespace {

/// oneDNN's sgemm on the calling thread's current OpenMP count.
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
           int64_t ldc) {
  if (k <= 0) { // no products: beta C, as BLAS leaves it
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, alpha, a,
                                    lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    // Only invalid arguments fail, which the callers' shape checks exclude.
    std::fprintf(stderr, "kiln: internal error: oneDNN sgemm %lldx%lldx%lld failed (%d)\n",
                 static_cast<long long>(m), static_cast<long long>(n),
                 static_cast<long long>(k), static_cast<int>(status));
    std::abort();
  }
}

} // namespace

void hostSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  applyHostThreads();
  sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void hostSgemmDeterministic(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                            float alpha, const float *a, int64_t lda, const float *b,
                            int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  // Fixed tiles: the same calls, so the same sums, on any thread count.
  constexpr int64_t kRows = kDeterministicTileRows, kCols = kDeterministicTileCols;
  int64_t rowTiles = (m + kRows - 1) / kRows, colTiles = (n + kCols - 1) / kCols;
  applyHostThreads();
  ref::parallelRanges(rowTiles * colTiles, kRows * kCols * std::max<int64_t>(k, 1),
                      [&](int64_t begin, int64_t end) {
    SingleThreadScope alone;
    for (int64_t t = begin; t < end; ++t) {
      int64_t i = t / colTiles * kRows, j = t % colTiles * kCols;
      int64_t rows = std::min(kRows, m - i), cols = std::min(kCols, n - j);
      // Row i of op(A) and column j of op(B), where they are stored.
      const float *ai = transA ? a + i : a + i * lda;
      const float *bj = transB ? b + j * ldb : b + j;
      sgemm(transA, transB, rows, cols, k, alpha, ai, lda, bj, ldb, beta, c + i * ldc + j, ldc);
    }
  });
}

} // namespace rt
} // namespace kiln
