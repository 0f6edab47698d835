//===- HostDevice.h - steps in host memory: cpu and cuda-emu ----*- C++ -*-===//
//
// Every value lives in host memory: the arena is one allocation, inputs are
// read where the session keeps them, weights where the file is mapped. The
// plan's streams run as threads (StreamWorkers) with its events between
// them. On the CPU each step runs the CPU backend with the executable's
// native kernels (on the reference device, every op by the reference
// evaluator); on cuda-emu a step with a
// kernel runs it under the CUDA emulator (CudaEmuDevice) and the rest fall
// back to the CPU backend. Transfers are copies: the CPU is the reference
// for any plan, a GPU one included.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_HOSTDEVICE_H
#define KILN_LIB_RUNTIME_HOSTDEVICE_H

#include "CpuCode.h"
#include "HostConv.h"
#include "CudaEmuDevice.h"
#include "Device.h"
#include "Scheduler.h"

namespace kiln {
namespace rt {

class HostDevice final : public Device {
public:
  HostDevice(const Program &program, std::unique_ptr<CudaEmuDevice> emu,
             std::unique_ptr<CpuCode> cpuCode, CpuMode mode);
  ~HostDevice() override;
  /// Allocates the arena; fails when the host cannot hold it.
  Status allocate();
  /// Stand-ins for the native kernels (SessionOptions::cpuKernelStandIns).
  void setKernelStandIns(bool on) { kernelStandIns_ = on; }

  using Device::run;
  Status run(const std::vector<std::vector<uint8_t>> &inputs, std::vector<StepTiming> *timings,
             size_t begin, size_t end) override;
  Status copyValue(const Device &from, uint32_t value) override;
  Status readI64(uint32_t value, int64_t element, int64_t &out) const override;
  const uint8_t *outputData(size_t index) const override;
  std::string describe() const override;
  std::vector<KernelProfile> kernelProfiles() const override {
    return emu_ ? emu_->kernelProfiles(program_) : std::vector<KernelProfile>();
  }

private:
  /// Where a program value lives during a run.
  const uint8_t *valueData(uint32_t value) const;
  const Program &program_;
  std::unique_ptr<CudaEmuDevice> emu_; ///< null on the CPU
  std::unique_ptr<CpuCode> cpuCode_;    ///< the native kernels, if any
  CpuMode mode_;
  std::vector<HostConvCache> convolutions_; ///< per step: oneDNN primitives kept
  bool kernelStandIns_ = false;
  uint8_t *arena_ = nullptr;
  std::unique_ptr<StreamWorkers> workers_;
  const std::vector<std::vector<uint8_t>> *inputs_ = nullptr; ///< the session's
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_HOSTDEVICE_H
