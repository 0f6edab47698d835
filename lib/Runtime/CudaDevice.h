//===- CudaDevice.h - steps on a GPU ----------------------------*- C++ -*-===//
//
// The CUDA device. The executable's cubin for the GPU's architecture (or
// its PTX, JIT-compiled by the driver) is loaded with cudaLibraryLoadData;
// an executable with neither for this GPU is refused at load, naming both
// architectures. The plan's arena is one device allocation, weights are
// copied once. A run:
//
//   stream 0: inputs H2D (pinned staging) -> fork event
//   stream s: waits fork -> its steps, with the plan's events -> join event
//   stream 0: waits every join -> outputs D2H (pinned) -> synchronize
//
// The plan's streams are non-blocking, so nothing orders them against the
// legacy default stream a library might use; every ordering is an event.
// A step is a kernel launch, a cuBLASLt or cuDNN call (CublasLtCalls,
// CudnnCalls; a cuDNN call whose fused graph no engine takes is the plain
// convolution followed by the step's epilogue kernel), a device-to-device
// copy (a transfer), or a host step between copies (the host fallback). With --cuda-graph the schedule between fork
// and join is captured once and replayed (CudaGraph). Every error names the
// step (stepLabel): its kind, kernel or library call and model locations.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDADEVICE_H
#define KILN_LIB_RUNTIME_CUDADEVICE_H

#include "CublasLtCalls.h"
#include "CudaApi.h"
#include "CudaGraph.h"
#include "CudnnCalls.h"
#include "Device.h"

namespace kiln {
namespace rt {

class CudaDevice final : public Device {
public:
  /// Opens the CUDA runtime and the chosen GPU, loads the program's code
  /// and allocates its memory; fails with a message saying what is missing.
  static Result<std::unique_ptr<CudaDevice>> create(const Program &program,
                                                    const SessionOptions &options);
  ~CudaDevice() override;

  using Device::run;
  Status run(const std::vector<std::vector<uint8_t>> &inputs, std::vector<StepTiming> *timings,
             size_t begin, size_t end) override;
  Status copyValue(const Device &from, uint32_t value) override;
  Status readI64(uint32_t value, int64_t element, int64_t &out) const override;
  const uint8_t *outputData(size_t index) const override;
  std::string describe() const override;

private:
  CudaDevice(const Program &program, const SessionOptions &options)
      : program_(program), options_(options) {}
  Status selectGpu();
  /// cudaSetDevice to the session's GPU, for the calling thread.
  Status makeCurrent() const;
  Status loadCode();
  Status allocate();
  /// Where a program value lives on the GPU.
  uint8_t *deviceData(uint32_t value) const;
  /// Queues fork, steps [begin, end) and join; `capturing` when under
  /// graph capture.
  Status enqueueSchedule(bool capturing, size_t begin, size_t end);
  Status enqueueStep(size_t index, cudaStream_t stream);
  Status runOnHost(size_t index, cudaStream_t stream);
  Status recordTiming(size_t event, cudaStream_t stream, bool capturing);
  Status readTimings(std::vector<StepTiming> &timings, size_t begin, size_t end) const;

  const Program &program_;
  SessionOptions options_;
  std::unique_ptr<CudaApi> api_;
  int arch_ = 0;                            ///< 90 for sm_90
  std::string gpuName_;
  const DeviceCodeDesc *code_ = nullptr;    ///< the code loaded, if any kernel
  cudaLibrary_t library_ = nullptr;
  std::vector<cudaKernel_t> kernels_;       ///< per step (null: none)
  std::vector<cudaStream_t> streams_;       ///< per plan stream
  std::vector<cudaEvent_t> events_;         ///< per plan event
  std::vector<cudaEvent_t> forkJoinEvents_; ///< fork, then one join per stream
  std::vector<cudaEvent_t> timingEvents_;   ///< run start, then each step's start and end
  uint8_t *arena_ = nullptr;
  std::vector<uint8_t *> weights_;      ///< device copies
  std::vector<uint8_t *> inputBuffers_; ///< device
  std::vector<uint8_t *> stagingIn_, stagingOut_; ///< pinned host buffers
  std::unique_ptr<CublasLtCalls> libraryCalls_;
  std::unique_ptr<CudnnCalls> dnnCalls_;
  size_t runs_ = 0;
  std::unique_ptr<CudaGraph> graph_;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDADEVICE_H
