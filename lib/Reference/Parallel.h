//===- Parallel.h - the f32 paths' loops on OpenMP's threads -*- C++ -*-===//
//
// The CPU backend's f32 paths split their loops over OpenMP's threads, in
// the OpenMP runtime oneDNN's GEMMs run on (lib/Runtime/HostThreads.h sets the
// calling thread's count), so kiln's loops and the library share the
// calling thread's team. Each element is computed by exactly one thread,
// exactly as a serial loop would: results do not depend on the count. Private to lib/Reference,
// the one library built with OpenMP: elsewhere the pragma would be ignored
// and the loop would run serially without a word (as under clang, whose
// -fopenmp=libgomp does not enable the pragmas: the sanitizer builds run
// these loops serially).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_REFERENCE_PARALLEL_H
#define KILN_LIB_REFERENCE_PARALLEL_H

#include <algorithm>
#include <cstdint>

namespace kiln {
namespace ref {

/// Work (items x cost each) below which waking the threads costs more than
/// it saves (a few microseconds of serial work).
constexpr int64_t kParallelWork = 1 << 15;

/// body(begin, end) over consecutive ranges covering [0, n), on OpenMP's
/// threads when n * costPerItem reaches kParallelWork, else inline.
template <typename Body>
void parallelFor(int64_t n, int64_t costPerItem, const Body &body) {
  if (n <= 0)
    return;
  int64_t work; // saturating: a hostile kernel size must not overflow it
  if (__builtin_mul_overflow(n, std::max<int64_t>(costPerItem, 1), &work))
    work = INT64_MAX;
  if (n < 2 || work < kParallelWork) {
    body(int64_t(0), n);
    return;
  }
  // More ranges than threads, so that uneven cores even out.
  const int64_t ranges = std::min<int64_t>(n, 64);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < ranges; ++r)
    body(n * r / ranges, n * (r + 1) / ranges);
}

} // namespace ref
} // namespace kiln

#endif // KILN_LIB_REFERENCE_PARALLEL_H
