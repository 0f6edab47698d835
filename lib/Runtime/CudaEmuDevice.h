//===- CudaEmuDevice.h - steps as emulated CUDA kernels ---------*- C++ -*-===//
//
// The cuda-emu device: the executable's host-built kernel library is loaded
// from memory (memfd + dlopen), and each step with a kernel runs through
// the CUDA emulator on the step's buffers; a cuBLASLt step runs its
// descriptor on the host (runGemmOnHost); steps without either run on the
// CPU backend (the host fallback).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDAEMUDEVICE_H
#define KILN_LIB_RUNTIME_CUDAEMUDEVICE_H

#include "Program.h"

#include "kiln/CudaEmu/Emulator.h"

#include <memory>

namespace kiln {
namespace rt {

class CudaEmuDevice {
public:
  /// Loads the kernels of `program`; fails if it carries none for cuda-emu.
  /// With `convEpilogueKernels`, a cuDNN step runs its plain convolution
  /// and then its epilogue kernel (what the GPU does when cuDNN has no
  /// engine for the fused graph), not the fused descriptor.
  static Result<std::unique_ptr<CudaEmuDevice>> load(const Program &program,
                                                     const emu::LaunchOptions &options,
                                                     bool convEpilogueKernels = false);
  ~CudaEmuDevice();

  /// Runs step `index`: its kernel under the emulator, or the CPU backend.
  Status runStep(const Program &program, size_t index, const std::vector<const uint8_t *> &inputs,
                 const std::vector<uint8_t *> &outputs) const;

private:
  CudaEmuDevice() = default;
  /// Whether step `index` launches its kernel as the library records it.
  static Status checkLaunch(void *library, const Program &program, size_t index);
  using ThreadEntry = void (*)(void *const *);
  void *library_ = nullptr;
  std::vector<ThreadEntry> entries_; ///< per step; null for host steps
  emu::LaunchOptions options_;
  bool convEpilogueKernels_ = false;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDAEMUDEVICE_H
