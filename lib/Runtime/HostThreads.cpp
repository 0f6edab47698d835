//===- HostThreads.cpp - the CPU's thread count, on OpenMP ----------------===//

#include "HostThreads.h"

#include "kiln/Runtime/Runtime.h"

#include <algorithm>
#include <atomic>
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

const OpenMp &openMp() {
  static const OpenMp omp;
  return omp;
}

} // namespace

SingleThreadScope::SingleThreadScope() {
  const OpenMp &omp = openMp();
  if (!omp.getMaxThreads || !omp.setNumThreads)
    return;
  previous_ = omp.getMaxThreads();
  omp.setNumThreads(1);
}

SingleThreadScope::~SingleThreadScope() {
  if (previous_ > 0)
    openMp().setNumThreads(previous_);
}

void applyHostThreads() {
  const OpenMp &omp = openMp();
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

} // namespace rt
} // namespace kiln
