//===- Session.cpp - bind inputs, run, read outputs -----------------------===//

#include "Device.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace kiln {
namespace rt {

std::string TensorSpec::typeString() const {
  std::string s = std::string(ref::dtypeName(dtype)) + "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? ", " : "") + std::to_string(shape[d]);
  s += "]";
  if (!dimOrder.empty()) {
    if (dimOrder == std::vector<int64_t>{0, 2, 3, 1}) {
      s += " nhwc";
    } else {
      s += " perm[";
      for (size_t d = 0; d < dimOrder.size(); ++d)
        s += (d ? ", " : "") + std::to_string(dimOrder[d]);
      s += "]";
    }
  }
  if (device == DeviceKind::CUDA)
    s += " @cuda:" + std::to_string(deviceOrdinal);
  return s;
}

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Executable> exe,
                                                 const SessionOptions &options) {
  const Program &p = exe->program();
  if (options.convEpilogueKernels && options.device != DeviceChoice::Cuda &&
      options.device != DeviceChoice::CudaEmu)
    return Status::error("--conv-epilogue-kernels applies to --device=cuda and cuda-emu");
  if (options.emuProfile && options.device != DeviceChoice::CudaEmu)
    return Status::error("--profile applies to --device=cuda-emu (the emulator counts what "
                         "each kernel asks of the memory system)");
  if (options.cpuPortable && options.device != DeviceChoice::CPU &&
      options.device != DeviceChoice::Auto)
    return Status::error("--cpu-portable applies to --device=cpu");
  if (options.cpuKernelStandIns && options.device != DeviceChoice::CPU &&
      options.device != DeviceChoice::Auto)
    return Status::error("stand-ins for the native CPU kernels apply to the cpu device");
  if (options.device != DeviceChoice::Cuda) {
    if (options.cudaGraph)
      return Status::error("--cuda-graph applies to --device=cuda (it captures the schedule "
                           "into a CUDA graph)");
    if (options.syncEachStep)
      return Status::error("--sync-each-step applies to --device=cuda (the host devices run "
                           "each step to its end anyway)");
    if (options.deviceOrdinal != 0)
      return Status::error("a device number applies to --device=cuda:N only");
  }
  if (options.cudaGraph && options.syncEachStep)
    return Status::error("--sync-each-step and --cuda-graph exclude each other (a graph "
                         "replays the whole schedule in one launch)");
  // Every device runs every executable: on the CPU and cuda-emu, values
  // placed on a GPU live in host memory and transfers are copies (the CPU
  // is the reference for any plan); the CUDA device keeps every buffer on
  // the GPU and runs host-placed steps between copies.
  auto device = options.device == DeviceChoice::Cuda ? createCudaDevice(p, options)
                                                     : createHostDevice(p, options);
  if (!device)
    return device.status();
  std::unique_ptr<Session> session(new Session());
  session->exe_ = std::move(exe);
  session->device_ = std::move(*device);
  session->stepTimings_ = options.stepTimings;
  for (const TensorSpec &input : p.inputs)
    session->inputStorage_.emplace_back(input.byteSize());
  session->inputSet_.assign(p.inputs.size(), false);
  return session;
}

Session::~Session() = default;

Status Session::setInput(size_t index, const void *data, size_t bytes) {
  const Program &p = exe_->program();
  if (index >= p.inputs.size())
    return Status::error("there is no input #" + std::to_string(index));
  if (bytes != inputStorage_[index].size())
    return Status::error("input '" + p.inputs[index].name + "' (" +
                         p.inputs[index].typeString() + ") takes " +
                         std::to_string(inputStorage_[index].size()) + " bytes, got " +
                         std::to_string(bytes));
  if (bytes)
    std::memcpy(inputStorage_[index].data(), data, bytes);
  inputSet_[index] = true;
  return Status::ok();
}

Status Session::run() {
  const Program &p = exe_->program();
  for (size_t k = 0; k < inputSet_.size(); ++k)
    if (!inputSet_[k])
      return Status::error("input '" + p.inputs[k].name + "' was not set");
  timings_.clear();
  Status st = device_->run(inputStorage_, stepTimings_ ? &timings_ : nullptr);
  ran_ = st.isOk();
  return st;
}

const void *Session::outputData(size_t index) const {
  if (!ran_ || index >= exe_->program().outputValues.size())
    return nullptr;
  return device_->outputData(index);
}

std::string Session::describeDevice() const { return device_->describe(); }

std::vector<KernelProfile> Session::kernelProfiles() const { return device_->kernelProfiles(); }

std::vector<std::string> Executable::stepLocations(size_t step) const {
  if (step >= program_->steps.size())
    return {};
  return opLocations(program_->steps[step]);
}

std::string Executable::describe() const {
  const Program &p = *program_;
  std::string s = "executable " + p.name + "\n";
  for (const TensorSpec &t : p.inputs)
    s += "  input  " + t.name + ": " + t.typeString() + "\n";
  for (const TensorSpec &t : p.outputs)
    s += "  output " + t.name + ": " + t.typeString() + "\n";
  uint64_t weightBytes = 0;
  for (const WeightDesc &w : p.weights)
    weightBytes += w.size;
  s += "  weights: " + std::to_string(p.weights.size()) + " (" + std::to_string(weightBytes) +
       " bytes)\n";
  s += "  arena: " + std::to_string(p.arenaBytes) + " bytes\n";
  s += "  streams: " + std::to_string(p.numStreams) +
       ", events: " + std::to_string(p.numEvents) + "\n";
  if (p.deterministic)
    s += "  library calls: deterministic (the same bits on any thread count)\n";
  // Steps are kernels: say how many are fused regions, by kind.
  std::map<std::string, int> fused;
  for (const StepDesc &step : p.steps)
    if (!step.kind.empty())
      ++fused[step.kind];
  for (const DeviceCodeDesc &code : p.deviceCode)
    s += "  device code: " + code.target + " " + code.format + " (" + std::to_string(code.size) +
         " bytes)\n";
  s += "  steps: " + std::to_string(p.steps.size());
  for (const auto &[kind, count] : fused)
    s += (kind == fused.begin()->first ? " (fused: " : ", ") + kind + " " + std::to_string(count);
  s += fused.empty() ? "\n" : ")\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const StepDesc &step = p.steps[i];
    s += "    #" + std::to_string(i) + " " + step.name + " stream " +
         std::to_string(step.stream);
    if (!step.waits.empty()) {
      s += " waits";
      for (uint32_t e : step.waits)
        s += " e" + std::to_string(e);
    }
    if (step.event >= 0)
      s += " signals e" + std::to_string(step.event);
    if (!step.kernel.empty())
      s += " kernel " + step.kernel + "<<<" + std::to_string(step.grid) + ", " +
           std::to_string(step.block) + ">>>";
    if (step.gemm)
      s += " cuBLASLt " + std::to_string(step.gemm->m) + "x" + std::to_string(step.gemm->n) +
           "x" + std::to_string(step.gemm->k) +
           (step.gemm->batch > 1 ? " x" + std::to_string(step.gemm->batch) : std::string()) +
           " epilogue " + gemmEpilogueName(step.gemm->epilogue);
    if (step.conv)
      s += " cuDNN conv " + std::to_string(step.conv->k) + "x" + std::to_string(step.conv->c) +
           "x" + std::to_string(step.conv->r) + "x" + std::to_string(step.conv->s) +
           (step.conv->nhwc ? " nhwc" : "") + (step.conv->bias ? " +bias" : "") +
           (step.conv->relu ? " +relu" : "");
    for (const CpuKernelDesc &k : step.cpuKernels)
      s += " cpu " + k.symbol + "(ops " + std::to_string(k.firstOp) + "-" +
           std::to_string(k.firstOp + k.opCount - 1) + ")";
    for (uint32_t out : step.outputs)
      s += " -> arena[" + std::to_string(p.values[out].index) + "] " +
           p.values[out].type.typeString();
    s += "\n";
  }
  return s;
}

} // namespace rt
} // namespace kiln
