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

#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace kiln {
namespace rt {

class CudaEmuDevice {
public:
  /// Loads the kernels of `program`; fails if it carries none for cuda-emu.
  /// With `convEpilogueKernels`, a cuDNN step runs its plain convolution
  /// and then its epilogue kernel (what the GPU does when cuDNN has no
  /// engine for the fused graph), not the fused descriptor.
  /// With `profileSample`, every launch is profiled (emulating that many
  /// blocks of it, 0: all): the library must have been built with access
  /// tracing (kilnc --emu-profile).
  static Result<std::unique_ptr<CudaEmuDevice>>
  load(const Program &program, const emu::LaunchOptions &options,
       bool convEpilogueKernels = false, std::optional<unsigned> profileSample = std::nullopt);
  ~CudaEmuDevice();

  /// Runs step `index`: its kernel under the emulator, or the CPU backend.
  Status runStep(const Program &program, size_t index, const std::vector<const uint8_t *> &inputs,
                 const std::vector<uint8_t *> &outputs) const;

  /// The counts of every kernel launched so far, when profiling.
  std::vector<KernelProfile> kernelProfiles(const Program &program) const;

private:
  CudaEmuDevice() = default;
  /// Whether step `index` launches its kernel as the library records it.
  static Status checkLaunch(void *library, const Program &program, size_t index);
  /// For a kernel over symbolic sizes (`sizes`, its library record, or
  /// null): checks its size parameters and gives its grid and each
  /// buffer's bytes (-1: static, as the launch record has it) for the
  /// program's sizes.
  static Status symbolicLaunch(const long long *sizes, const Program &program,
                               const StepDesc &step, const std::string &what, long long &grid,
                               std::vector<long long> &paramBytes);
  void addProfile(const Program &program, size_t index, const emu::Profile &profile) const;
  using ThreadEntry = void (*)(void *const *);
  void *library_ = nullptr;
  std::vector<ThreadEntry> entries_; ///< per step; null for host steps
  emu::LaunchOptions options_;
  bool convEpilogueKernels_ = false;
  /// Profiling: what each kernel's launches counted (steps run on several
  /// stream threads at once).
  std::optional<unsigned> profileSample_;
  mutable std::mutex profileMutex_;
  mutable std::map<std::string, KernelProfile> profiles_;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDAEMUDEVICE_H
