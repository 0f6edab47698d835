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

/// The calling thread's OpenMP count set to 1 while it lives (then put
/// back): a library call that must compute the same way on any machine
/// and thread count (--deterministic) runs on this thread alone.
class SingleThreadScope {
public:
  SingleThreadScope();
  ~SingleThreadScope();
  SingleThreadScope(const SingleThreadScope &) = delete;
  SingleThreadScope &operator=(const SingleThreadScope &) = delete;

private:
  int previous_ = 0;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_HOSTTHREADS_H
