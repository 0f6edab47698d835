//===- Device.h - where a session's steps run -------------------*- C++ -*-===//
//
// A Session binds inputs and reads outputs; a Device runs the program. The
// host devices (cpu, cuda-emu) keep every value in host memory and run
// the plan's streams as threads; the CUDA device keeps every value on the
// GPU and runs the plan on CUDA streams. Session never asks which one it
// has.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_DEVICE_H
#define KILN_LIB_RUNTIME_DEVICE_H

#include "Program.h"

#include <memory>

namespace kiln {
namespace rt {

class Device {
public:
  virtual ~Device() = default;

  /// Runs steps [begin, end) of the program on `inputs` (host memory, one
  /// buffer per program input, alive until the next run). The steps before
  /// `begin` ran before, here or on a device whose values copyValue()
  /// brought here: a length read mid-run gives the steps after it a
  /// program of their own (Session::run). With `timings`, one entry per
  /// step run: its span since this call's start.
  virtual Status run(const std::vector<std::vector<uint8_t>> &inputs,
                     std::vector<StepTiming> *timings, size_t begin, size_t end) = 0;
  Status run(const std::vector<std::vector<uint8_t>> &inputs, std::vector<StepTiming> *timings) {
    return run(inputs, timings, 0, SIZE_MAX);
  }

  /// Copies buffer `value` from `from`, a device of the same kind running
  /// another specialisation of the same executable, which computed it; its
  /// size must be the same in both.
  virtual Status copyValue(const Device &from, uint32_t value) = 0;

  /// Element `element` of the i64 buffer `value` (the loader checked both),
  /// once the step computing it has run.
  virtual Status readI64(uint32_t value, int64_t element, int64_t &out) const = 0;

  /// Output `index` of the last run, in host memory.
  virtual const uint8_t *outputData(size_t index) const = 0;

  /// "device ..." and what the device loaded: the GPU, its architecture,
  /// the code chosen for it and the vendor libraries' files.
  virtual std::string describe() const = 0;

  /// What a profiling cuda-emu counted; empty elsewhere.
  virtual std::vector<KernelProfile> kernelProfiles() const { return {}; }
};

/// The CPU, or cuda-emu when `options.device` asks for it.
Result<std::unique_ptr<Device>> createHostDevice(const Program &program,
                                                 const SessionOptions &options);

/// A GPU through the CUDA runtime; a clear error where there is none.
Result<std::unique_ptr<Device>> createCudaDevice(const Program &program,
                                                 const SessionOptions &options);

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_DEVICE_H
