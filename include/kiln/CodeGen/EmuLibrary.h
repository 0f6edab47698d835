//===- EmuLibrary.h - generated kernels built for cuda-emu ------*- C++ -*-===//
//
// For --target=cuda-emu, kilnc compiles the generated kernel text with the
// host C++ compiler (cuda_emu.h force-included) into one shared object that
// the executable carries. For each kernel K it exports
//   extern "C" void kiln_emu_thread_K(void *const *args);
// which runs one CUDA thread of K on the kernel's parameters; the runtime's
// cuda-emu device launches it through kiln::emu::launch. Beside it,
//   extern "C" const long long kiln_emu_launch_K[];
// holds what K was generated for (grid, block; parameter count, each
// parameter's bytes and dtype; the step input positions it takes; the steps
// that launch it), which the device checks every step against at load.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_EMULIBRARY_H
#define KILN_CODEGEN_EMULIBRARY_H

#include "kiln/CodeGen/KernelGenerator.h"

#include <map>
#include <string>
#include <vector>

namespace mlir {
namespace kiln {

/// How the kernels are built. A profiled build traces every load and store
/// (clang's -fsanitize-coverage=trace-loads,trace-stores, calling the
/// emulator's hooks) and records each kernel's sm_90 registers and shared
/// bytes (`resources`, by kernel name, from NVRTC), its FLOPs and whether
/// they suit Tensor Cores.
struct EmuBuild {
  std::string sanitizers;
  bool profile = false;
  std::map<std::string, std::pair<int, int>> resources; ///< registers, shared bytes
};

/// The translation unit: every kernel's text and its thread entry.
std::string emuLibrarySource(const std::vector<GeneratedKernel> &kernels,
                             const EmuBuild &build = {});

/// Sanitizers to build the kernels with (`kilnc --emu-sanitize`): a
/// comma-separated subset of "address" and "undefined", or empty. Such
/// kernels load only into a process carrying clang's sanitizer runtimes
/// (a kiln-run built with -DKILN_SANITIZE, as by scripts/test --sanitize).
/// Returns an error message for anything else, or "".
std::string checkEmuSanitizers(const std::string &sanitizers);

/// Builds the shared object, or takes it from the compile cache (`cached`
/// says which); on failure returns false with the compiler's output in
/// `error`. The compiler is $KILN_HOST_CXX, else c++ on PATH (clang++-19,
/// else clang++, when sanitizing, the runtime must match kiln-run's, or
/// profiling).
bool buildEmuLibrary(const std::vector<GeneratedKernel> &kernels, const EmuBuild &build,
                     std::string &sharedObject, std::string &error, bool *cached = nullptr);

} // namespace kiln
} // namespace mlir

#endif // KILN_CODEGEN_EMULIBRARY_H
