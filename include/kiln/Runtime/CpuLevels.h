//===- CpuLevels.h - the x86-64 levels native CPU code is built for -*- C++ -*-===//
//
// One list for the compiler, which builds the CPU kernels for a level and
// the baseline (kiln/CodeGen/CpuCode.h), and the runtime, which checks the
// CPU has the level of the code it links (lib/Runtime/CpuCode.h): the
// x86-64 microarchitecture levels, lowest first (every x86-64 CPU; SSE4.2;
// AVX2 with FMA; AVX-512).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CPULEVELS_H
#define KILN_RUNTIME_CPULEVELS_H

#include <cstring>
#include <string>

namespace kiln {

inline constexpr const char *kCpuLevels[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
inline constexpr int kCpuLevelCount = 4;

/// The portable baseline, always built beside the chosen level.
inline constexpr const char *kCpuBaseline = kCpuLevels[0];

/// The level's place in kCpuLevels, or -1 for another name.
inline int cpuLevelRank(const char *name) {
  for (int k = 0; k < kCpuLevelCount; ++k)
    if (std::strcmp(name, kCpuLevels[k]) == 0)
      return k;
  return -1;
}

/// "x86-64, x86-64-v2, x86-64-v3 or x86-64-v4", for messages.
inline std::string cpuLevelNames() {
  std::string names;
  for (int k = 0; k < kCpuLevelCount; ++k)
    names += (k == 0 ? "" : k + 1 == kCpuLevelCount ? " or " : ", ") + std::string(kCpuLevels[k]);
  return names;
}

} // namespace kiln

#endif // KILN_RUNTIME_CPULEVELS_H
