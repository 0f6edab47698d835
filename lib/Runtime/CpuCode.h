//===- CpuCode.h - an executable's native CPU kernels, ready to call -*- C++ -*-===//
//
// An executable built with --target=cpu carries its kernels as ELF objects
// for an x86-64 level ("x86-64-v4": AVX-512) and for the portable
// baseline ("x86-64"). On load the runtime checks this CPU has the level
// and links that object (CpuObject.h); on a CPU without it, loading
// refuses, naming the level, unless the caller asks for the portable code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CPUCODE_H
#define KILN_LIB_RUNTIME_CPUCODE_H

#include "CpuObject.h"
#include "Program.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

/// The highest x86-64 level this CPU has ("x86-64" ... "x86-64-v4"), or
/// $KILN_SIMULATE_CPU_LEVEL when set (tests: a CPU without AVX-512).
std::string hostCpuLevel();

/// Whether a CPU of level `host` runs code built for `level`.
bool cpuLevelCovers(const std::string &host, const std::string &level);

class CpuCode {
public:
  /// Links the program's CPU code: the object for its level, or the
  /// baseline's when `portable` (or when the level is the baseline). Null
  /// when the program has none.
  static Result<std::unique_ptr<CpuCode>> load(const Program &program, bool portable);

  /// The kernels of step `step`, one per program.steps[step].cpuKernels.
  const std::vector<CpuKernelFn> &kernels(size_t step) const { return kernels_[step]; }
  /// The level of the code linked.
  const std::string &level() const { return level_; }

private:
  std::unique_ptr<CpuObject> object_;
  std::vector<std::vector<CpuKernelFn>> kernels_;
  std::string level_;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CPUCODE_H
