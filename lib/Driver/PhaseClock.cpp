//===- PhaseClock.cpp - wall time per compile phase -----------------------===//

#include "kiln/Driver/PhaseClock.h"

#include <cstdio>
#include <sys/resource.h>

namespace kiln {
namespace driver {

void PhaseClock::mark(const std::string &phase) {
  auto now = std::chrono::steady_clock::now();
  phases.push_back({phase, std::chrono::duration<double>(now - last).count()});
  last = now;
}

void PhaseClock::print(llvm::raw_ostream &os) const {
  double total = 0;
  os << "kilnc: phases:";
  for (const auto &[name, seconds] : phases) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), " %s %.3f s,", name.c_str(), seconds);
    os << buffer;
    total += seconds;
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  char buffer[96];
  std::snprintf(buffer, sizeof(buffer), " total %.3f s; peak memory %ld KiB\n", total,
                static_cast<long>(usage.ru_maxrss));
  os << buffer;
}

} // namespace driver
} // namespace kiln
