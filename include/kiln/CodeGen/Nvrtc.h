//===- Nvrtc.h - CUDA C++ to PTX and cubin, without a GPU -------*- C++ -*-===//
//
// NVRTC compiles at compile time (it needs no GPU or driver). The result
// holds PTX (which a driver can JIT for any newer GPU) and a cubin for the
// requested architecture, plus what ptxas reported about each kernel's
// resources. Built without the CUDA toolkit, compileCuda fails with a
// message saying so.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_NVRTC_H
#define KILN_CODEGEN_NVRTC_H

#include <map>
#include <string>
#include <vector>

namespace kiln {
namespace codegen {

/// What ptxas said about one kernel (-Xptxas=-v).
struct KernelResources {
  int registers = -1;
  int sharedBytes = 0;
  int stackBytes = 0;
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  bool spills() const { return spillStoreBytes > 0 || spillLoadBytes > 0; }
  /// "40 registers, 2048 bytes shared[ + N dynamic], no spills" (or
  /// "SPILLS S/L bytes"), and ", STACK FRAME N bytes" for arrays ptxas left
  /// in local memory: the kernel report's line.
  std::string summary(unsigned dynamicSharedBytes = 0) const;
};

struct NvrtcResult {
  bool ok = false;
  /// The compile log: errors with `name`:line:column, or ptxas' report.
  std::string log;
  std::string ptx;
  std::string cubin;
  /// By kernel (mangled) name.
  std::map<std::string, KernelResources> resources;
};

/// True when kiln was built with NVRTC.
bool haveNvrtc();

/// "13.0" (or "none").
std::string nvrtcVersion();

/// The options compileCuda passes to NVRTC for `arch` (part of cache keys).
std::vector<std::string> nvrtcOptions(const std::string &arch);

/// Compiles `source` (named `name` in messages) for `arch` ("sm_90").
NvrtcResult compileCuda(const std::string &source, const std::string &name,
                        const std::string &arch,
                        const std::vector<std::string> &extraOptions = {});

/// Parses ptxas' -v report (exposed for tests).
std::map<std::string, KernelResources> parsePtxasReport(const std::string &log);

} // namespace codegen
} // namespace kiln

#endif // KILN_CODEGEN_NVRTC_H
