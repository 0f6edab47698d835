//===- PhaseClock.h - wall time per compile phase ---------------*- C++ -*-===//
//
// kilnc --time-phases: each mark closes the phase that began at the
// previous mark (or at construction); print() lists them with the total
// and the process's peak memory.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_PHASECLOCK_H
#define KILN_DRIVER_PHASECLOCK_H

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace driver {

class PhaseClock {
public:
  void mark(const std::string &phase);
  /// "kilnc: phases: parse 0.012 s, ... total 0.345 s; peak memory N KiB".
  void print(llvm::raw_ostream &os) const;

private:
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, double>> phases;
};

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_PHASECLOCK_H
