//===- HostGemm.cpp - single-precision matrix products on the CPU ---------===//

#include "HostGemm.h"

#include "HostThreads.h"

#include <dnnl.h>

#include <cstdio>
#include <cstdlib>

namespace kiln {
namespace rt {

void hostSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) { // no products: beta C, as BLAS leaves it
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  applyHostThreads();
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

} // namespace rt
} // namespace kiln
