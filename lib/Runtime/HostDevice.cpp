//===- HostDevice.cpp - steps in host memory: cpu and cuda-emu ------------===//

#include "HostDevice.h"

#include "kiln/Runtime/LibraryAlignment.h"

#include <cstdlib>
#include <cstring>

namespace kiln {
namespace rt {

Result<std::unique_ptr<Device>> createHostDevice(const Program &program,
                                                 const SessionOptions &options) {
  std::unique_ptr<CudaEmuDevice> emu;
  if (options.device == DeviceChoice::CudaEmu) {
    emu::LaunchOptions launch;
    launch.order = options.emuOrder == EmuOrder::Reverse    ? emu::Order::Reverse
                   : options.emuOrder == EmuOrder::Shuffled ? emu::Order::Shuffled
                                                            : emu::Order::Forward;
    launch.checked = options.emuChecked;
    std::optional<unsigned> profileSample;
    if (options.emuProfile)
      profileSample = options.emuProfileSample;
    auto loaded =
        CudaEmuDevice::load(program, launch, options.convEpilogueKernels, profileSample);
    if (!loaded)
      return loaded.status();
    emu = std::move(*loaded);
  }
  // The CPU runs the executable's native kernels; the reference and
  // cuda-emu devices compute those ops one by one.
  std::unique_ptr<CpuCode> cpuCode;
  if (!emu && options.device != DeviceChoice::Reference) {
    auto loaded = CpuCode::load(program, options.cpuPortable);
    if (!loaded)
      return loaded.status();
    cpuCode = std::move(*loaded);
  }
  CpuMode mode = options.device == DeviceChoice::Reference ? CpuMode::Reference : CpuMode::Fast;
  auto device = std::make_unique<HostDevice>(program, std::move(emu), std::move(cpuCode), mode);
  device->setKernelStandIns(options.cpuKernelStandIns);
  if (Status st = device->allocate(); !st)
    return st;
  return std::unique_ptr<Device>(std::move(device));
}

HostDevice::HostDevice(const Program &program, std::unique_ptr<CudaEmuDevice> emu,
                       std::unique_ptr<CpuCode> cpuCode, CpuMode mode)
    : program_(program), emu_(std::move(emu)), cpuCode_(std::move(cpuCode)), mode_(mode),
      convolutions_(program.steps.size()) {}

HostDevice::~HostDevice() { std::free(arena_); }

Status HostDevice::allocate() {
  if (program_.arenaBytes > 0) {
    // Aligned as cudaMalloc aligns the GPU's arena: the plan's offsets
    // then give every buffer the same alignment on every device.
    size_t bytes = (program_.arenaBytes + kLibraryAlignment - 1) / kLibraryAlignment *
                   kLibraryAlignment;
    if (bytes >= program_.arenaBytes) // else the rounding wrapped
      arena_ = static_cast<uint8_t *>(std::aligned_alloc(kLibraryAlignment, bytes));
    if (!arena_)
      return Status::error("cannot allocate the " + std::to_string(program_.arenaBytes) +
                           "-byte arena");
    std::memset(arena_, 0, bytes);
  }
  if (program_.numStreams > 1)
    workers_ = std::make_unique<StreamWorkers>(program_.numStreams);
  return Status::ok();
}

const uint8_t *HostDevice::valueData(uint32_t value) const {
  const ValueDesc &v = program_.values[value];
  switch (v.kind) {
  case ValueKind::Input:
    return (*inputs_)[v.index].data();
  case ValueKind::Weight:
    return program_.weights[v.index].data;
  case ValueKind::Buffer:
    return arena_ + v.index;
  }
  return nullptr;
}

Status HostDevice::run(const std::vector<std::vector<uint8_t>> &inputs,
                       std::vector<StepTiming> *timings, size_t begin, size_t end) {
  inputs_ = &inputs;
  auto execute = [&](size_t index) {
    const StepDesc &step = program_.steps[index];
    std::vector<const uint8_t *> in;
    std::vector<uint8_t *> out;
    for (uint32_t v : step.inputs)
      in.push_back(valueData(v));
    for (uint32_t v : step.outputs)
      out.push_back(const_cast<uint8_t *>(valueData(v)));
    if (emu_)
      return emu_->runStep(program_, index, in, out);
    CpuStepResources resources;
    resources.kernels = cpuCode_ ? &cpuCode_->kernels(index) : nullptr;
    resources.convolutions = &convolutions_[index];
    resources.kernelStandIns = kernelStandIns_;
    return runStepOnCpu(program_, step, in, out, mode_, resources);
  };
  return runSchedule(program_, execute, timings, workers_.get(), begin, end);
}

Status HostDevice::copyValue(const Device &from, uint32_t value) {
  const auto *other = dynamic_cast<const HostDevice *>(&from);
  uint64_t bytes = 0;
  std::string why = other ? whyNotCopyable(program_, other->program_, value, bytes)
                          : "value #" + std::to_string(value) + " comes from another kind of device";
  if (!why.empty())
    return Status::error(why);
  if (bytes)
    std::memcpy(arena_ + program_.values[value].index,
                other->arena_ + other->program_.values[value].index, bytes);
  return Status::ok();
}

Status HostDevice::readI64(uint32_t value, int64_t element, int64_t &out) const {
  if (std::string why = whyNotI64Element(program_, value, element); !why.empty())
    return Status::error(why);
  std::memcpy(&out, valueData(value) + 8 * element, 8);
  return Status::ok();
}

const uint8_t *HostDevice::outputData(size_t index) const {
  if (index >= program_.outputValues.size() || !inputs_)
    return nullptr;
  return valueData(program_.outputValues[index]);
}

std::string HostDevice::describe() const {
  std::string s = emu_ ? "device cuda-emu (the executable's CUDA kernels run on the CPU)\n"
                  : mode_ == CpuMode::Reference
                      ? "device reference (every op by the double-precision reference evaluator)\n"
                      : "device cpu\n";
  if (cpuCode_)
    s += "  native code: " + cpuCode_->level() + " (this CPU: " + hostCpuLevel() + ")\n";
  s += "  streams: " + std::to_string(program_.numStreams) + " (threads)\n";
  return s;
}

} // namespace rt
} // namespace kiln
