//===- HostThreads.h - the CPU's thread count, on OpenMP --------*- C++ -*-===//
//
// The host's library calls (oneDNN's GEMMs and convolutions) and the CPU
// backend's own loops and native kernels (lib/Reference/Parallel.h) all run
// on OpenMP's pool, one runtime for all; rt::setHostThreads (Runtime.h)
// sets the count, which OpenMP keeps per calling thread, so every thread
// that runs steps applies it first.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_HOSTTHREADS_H
#define KILN_LIB_RUNTIME_HOSTTHREADS_H

namespace kiln {
namespace rt {

/// Sets the calling thread's OpenMP count to hostThreads(): before anything
/// that runs on the pool.
void applyHostThreads();

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_HOSTTHREADS_H
