//===- HostGemm.cpp - single-precision matrix products on the CPU ---------===//

#include "HostGemm.h"

#include "kiln/Runtime/Runtime.h"

#include <dnnl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

namespace kiln {
namespace rt {

namespace {

/// The cores this process may run on; the online CPUs where the affinity
/// mask cannot be read (more CPUs than a cpu_set_t holds).
unsigned affinityCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<unsigned>(std::clamp(online, 1L, 1024L));
}

/// OMP_NUM_THREADS when it holds a count (OpenMP's own setting, which
/// users of oneDNN and ONNX Runtime expect to work), else the cores this
/// process may run on.
unsigned defaultThreads() {
  if (const char *env = std::getenv("OMP_NUM_THREADS")) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= 1024)
      return static_cast<unsigned>(n);
  }
  return affinityCores();
}

std::atomic<unsigned> requestedThreads{0};

/// OpenMP's per-thread count, found in the process (oneDNN's OpenMP
/// runtime is loaded with it); absent with a oneDNN built for another
/// threading runtime, which then keeps its own default.
struct OpenMp {
  int (*getMaxThreads)() = nullptr;
  void (*setNumThreads)(int) = nullptr;
  OpenMp() {
    getMaxThreads = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    setNumThreads = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  }
};

} // namespace

void applyHostThreads() {
  static const OpenMp omp;
  if (!omp.getMaxThreads || !omp.setNumThreads)
    return;
  int want = static_cast<int>(hostThreads());
  if (omp.getMaxThreads() != want)
    omp.setNumThreads(want); // this calling thread's count, as OpenMP keeps it
}

void setHostThreads(unsigned threads) { requestedThreads.store(std::min(threads, 1024u)); }

unsigned hostThreads() {
  unsigned threads = requestedThreads.load();
  static const unsigned fallback = defaultThreads();
  return threads ? threads : fallback;
}

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
