//===- EmuLibrary.h - generated kernels built for cuda-emu ------*- C++ -*-===//
//
// For --target=cuda-emu, kilnc compiles the generated kernel text with the
// host C++ compiler (cuda_emu.h force-included) into one shared object that
// the executable carries. For each kernel K it exports
//   extern "C" void kiln_emu_thread_K(void *const *args);
// which runs one CUDA thread of K on the kernel's parameters; the runtime's
// cuda-emu device launches it through kiln::emu::launch.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_EMULIBRARY_H
#define KILN_CODEGEN_EMULIBRARY_H

#include "kiln/CodeGen/KernelGenerator.h"

#include <string>
#include <vector>

namespace mlir {
namespace kiln {

/// The translation unit: every kernel's text and its thread entry.
std::string emuLibrarySource(const std::vector<GeneratedKernel> &kernels);

/// Builds the shared object, or takes it from the compile cache (`cached`
/// says which); on failure returns false with the compiler's output in
/// `error`. The compiler is $KILN_HOST_CXX, else c++ on PATH.
bool buildEmuLibrary(const std::vector<GeneratedKernel> &kernels, std::string &sharedObject,
                     std::string &error, bool *cached = nullptr);

} // namespace kiln
} // namespace mlir

#endif // KILN_CODEGEN_EMULIBRARY_H
