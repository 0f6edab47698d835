//===- CudaDevice.h - steps on a GPU ----------------------------*- C++ -*-===//
//
// The CUDA device: the CUDA runtime is loaded with dlopen when a session
// asks for it, so kiln-run and standalone programs start (and run on the
// CPU) on machines without the toolkit or a driver, and say clearly why
// --device=cuda cannot run there. The executable's cubin for the GPU's
// architecture (or its PTX, JIT-compiled by the driver) is loaded with
// cudaLibraryLoadData; the plan's arena is one device allocation; steps
// with a kernel launch on the plan's streams with events between them;
// steps the compiler gave to cuBLASLt or cuDNN are calls on those streams
// (CublasLtCalls, CudnnCalls); steps with neither run on the host between copies (the
// host fallback). Inputs and outputs pass through pinned staging buffers;
// with --cuda-graph the schedule is captured once and replayed.
//
// First version: written and built without a GPU; scripts/gpu-check is what
// exercises it on one.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDADEVICE_H
#define KILN_LIB_RUNTIME_CUDADEVICE_H

#include "CublasLtCalls.h"
#include "CudnnCalls.h"
#include "Program.h"

#include <memory>

namespace kiln {
namespace rt {

class CudaDevice {
public:
  /// Opens the CUDA runtime and device 0, loads the program's kernels and
  /// allocates its memory; fails with a message saying what is missing.
  /// With `cudaGraph`, the first run captures the whole schedule into a
  /// CUDA graph and every run replays it (refused when a step runs on the
  /// host).
  static Result<std::unique_ptr<CudaDevice>> create(const Program &program,
                                                    bool cudaGraph = false);
  ~CudaDevice();

  /// Runs every step: inputs are host buffers (one per program input),
  /// outputs are written to host buffers (one per program output). With
  /// `timings`, each step's device time span (CUDA events around it on its
  /// stream) since the run's start.
  Status run(const Program &program, const std::vector<std::vector<uint8_t>> &inputs,
             std::vector<std::vector<uint8_t>> &outputs, std::vector<StepTiming> *timings);

  struct Api;

private:
  CudaDevice() = default;
  /// Where a program value lives on the device.
  uint8_t *deviceData(const Program &program, uint32_t value) const;
  Status enqueueSteps(const Program &program);
  std::unique_ptr<Api> api_;
  void *library_ = nullptr;             ///< cudaLibrary_t
  std::vector<void *> kernels_;         ///< cudaKernel_t per step (null: host)
  std::vector<void *> streams_;         ///< cudaStream_t per plan stream
  std::vector<void *> events_;          ///< cudaEvent_t per plan event
  std::vector<void *> timingEvents_;    ///< run start, then each step's start and end
  uint8_t *arena_ = nullptr;            ///< device
  std::vector<uint8_t *> weights_;      ///< device copies
  std::vector<uint8_t *> inputBuffers_; ///< device
  std::unique_ptr<CublasLtCalls> libraryCalls_;
  std::unique_ptr<CudnnCalls> dnnCalls_;
  std::vector<uint8_t *> stagingIn_, stagingOut_; ///< pinned host buffers
  bool graphMode_ = false;
  std::vector<void *> forkJoinEvents_; ///< per stream, for graph capture
  void *graphExec_ = nullptr;          ///< cudaGraphExec_t, after the first run
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDADEVICE_H
