//===- CudaDevice.cpp - steps on a GPU ------------------------------------===//

#include "Device.h"

#ifdef KILN_RUNTIME_HAVE_CUDA

#include "CudaDevice.h"

#include "kiln/Runtime/DeviceLimits.h"

#include <cstring>

namespace kiln {
namespace rt {

Result<std::unique_ptr<CudaApi>> CudaApi::open() {
  auto api = std::make_unique<CudaApi>();
  std::string why = api->library.open("CUDA runtime", {"libcudart.so.13", "libcudart.so"});
  if (!why.empty())
    return Status::error("--device=cuda needs the CUDA runtime (libcudart.so.13), which is not "
                         "installed here: " + why + "; use --device=cpu or --device=cuda-emu");
#define KILN_RESOLVE(name)                                                                     \
  if (!api->library.resolve(#name, api->name))                                                 \
    return Status::error("the CUDA runtime " + api->library.path() + " lacks " #name           \
                         " (kiln needs CUDA 13)");
  KILN_CUDA_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
  return api;
}

Status CudaApi::check(cudaError_t error, const std::string &what) const {
  if (error == cudaSuccess)
    return Status::ok();
  return Status::error(what + ": " + (cudaGetErrorString ? cudaGetErrorString(error) : "?") +
                       " (CUDA error " + std::to_string(static_cast<int>(error)) + ")");
}

namespace {

/// "sm_90" -> 90; -1 for anything else.
int archNumber(const std::string &target) {
  if (target.rfind("sm_", 0) != 0)
    return -1;
  try {
    return std::stoi(target.substr(3));
  } catch (...) {
    return -1;
  }
}

} // namespace

Result<std::unique_ptr<Device>> createCudaDevice(const Program &program,
                                                 const SessionOptions &options) {
  auto device = CudaDevice::create(program, options);
  if (!device)
    return device.status();
  return std::unique_ptr<Device>(std::move(*device));
}

Result<std::unique_ptr<CudaDevice>> CudaDevice::create(const Program &program,
                                                       const SessionOptions &options) {
  if (options.cudaGraph)
    for (size_t k = 0; k < program.steps.size(); ++k)
      if (!strcmp(stepCategory(program.steps[k]), "host"))
        return Status::error("--cuda-graph: " + stepLabel(k, program.steps[k]) +
                             " runs on the host, which a CUDA graph cannot capture; run "
                             "without --cuda-graph");
  auto api = CudaApi::open();
  if (!api)
    return api.status();
  std::unique_ptr<CudaDevice> device(new CudaDevice(program, options));
  device->api_ = std::move(*api);
  Status st = device->selectGpu();
  if (st)
    st = device->loadCode();
  if (st)
    st = device->allocate();
  if (!st)
    return st;
  auto address = [&](uint32_t value) { return device->deviceData(value); };
  auto libraryCalls = CublasLtCalls::create(program, address, device->arena_);
  if (!libraryCalls)
    return libraryCalls.status();
  device->libraryCalls_ = std::move(*libraryCalls);
  auto dnnCalls =
      CudnnCalls::create(program, address, device->arena_, options.convEpilogueKernels);
  if (!dnnCalls)
    return dnnCalls.status();
  device->dnnCalls_ = std::move(*dnnCalls);
  for (size_t k = 0; k < program.steps.size(); ++k)
    if (device->dnnCalls_->runsEpilogueKernel(k) && !device->kernels_[k])
      return Status::error(stepLabel(k, program.steps[k]) + ": " +
                           device->dnnCalls_->describe(k) + "; but the executable has no code "
                           "this GPU (sm_" + std::to_string(device->arch_) +
                           ") can run for the epilogue kernel; recompile with kilnc "
                           "--target=cuda --arch=sm_" + std::to_string(device->arch_));
  return device;
}

Status CudaDevice::selectGpu() {
  const CudaApi &cuda = *api_;
  int count = 0;
  cudaError_t error = cuda.cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0)
    return Status::error(
        std::string("--device=cuda: no usable GPU here (") +
        (error != cudaSuccess ? cuda.cudaGetErrorString(error) : "no CUDA devices") +
        "); use --device=cpu or --device=cuda-emu");
  int ordinal = options_.deviceOrdinal;
  if (ordinal < 0 || ordinal >= count)
    return Status::error("--device=cuda:" + std::to_string(ordinal) + ": this machine has " +
                         (count == 1 ? std::string("one GPU (cuda:0)")
                                     : std::to_string(count) + " GPUs (cuda:0 to cuda:" +
                                           std::to_string(count - 1) + ")"));
  std::string which = "GPU cuda:" + std::to_string(ordinal);
  Status st = cuda.check(cuda.cudaSetDevice(ordinal), "selecting " + which);
  cudaDeviceProp properties;
  std::memset(&properties, 0, sizeof(properties));
  if (st)
    st = cuda.check(cuda.cudaGetDeviceProperties(&properties, ordinal),
                    "reading the properties of " + which);
  if (!st)
    return st;
  arch_ = properties.major * 10 + properties.minor;
  gpuName_ = std::string(properties.name, strnlen(properties.name, sizeof(properties.name))) +
             ", " + std::to_string(properties.multiProcessorCount) + " SMs, " +
             std::to_string(properties.totalGlobalMem >> 20) + " MiB";
  return Status::ok();
}

Status CudaDevice::loadCode() {
  const CudaApi &cuda = *api_;
  // A cuDNN step's kernel is its epilogue, needed only if cuDNN has no
  // engine for its fused graph: code for this GPU is required only by the
  // other steps' kernels (checkEpilogueKernels says when an epilogue needs
  // code that is not there).
  bool anyKernel = false, required = false;
  for (const StepDesc &step : program_.steps) {
    anyKernel |= !step.kernel.empty();
    required |= !step.kernel.empty() && !step.conv;
  }
  kernels_.assign(program_.steps.size(), nullptr);
  if (!anyKernel)
    return Status::ok();
  // The cubin for this GPU, else the newest PTX it can JIT.
  int chosenArch = -1;
  std::string available;
  for (const DeviceCodeDesc &code : program_.deviceCode) {
    int codeArch = archNumber(code.target);
    if (codeArch < 0)
      continue;
    available += (available.empty() ? "" : ", ") + code.target + " " + code.format;
    if (code.size == 0)
      continue;
    // Architecture-specific code (sm_90a) runs only on that architecture.
    bool specific = code.target.find_first_of("af", 3) != std::string::npos;
    if (code.format == "cubin" && codeArch == arch_) {
      code_ = &code;
      break;
    }
    bool terminated = code.data[code.size - 1] == '\0'; // PTX is text
    if (code.format == "ptx" && terminated && !specific && codeArch <= arch_ &&
        codeArch > chosenArch) {
      code_ = &code;
      chosenArch = codeArch;
    }
  }
  if (!code_ && !required)
    return Status::ok();
  // What other stacks report later as "invalid device function".
  if (!code_)
    return Status::error("this GPU (" + gpuName_ + ") is sm_" + std::to_string(arch_) +
                         " but the executable has code only for: " +
                         (available.empty() ? std::string("none") : available) +
                         "; recompile with kilnc --target=cuda --arch=sm_" +
                         std::to_string(arch_));
  Status st = cuda.check(
      cuda.cudaLibraryLoadData(&library_, code_->data, nullptr, nullptr, 0, nullptr, nullptr, 0),
      "loading the executable's " + code_->target + " " + code_->format + " on sm_" +
          std::to_string(arch_));
  for (size_t k = 0; st && k < program_.steps.size(); ++k)
    if (!program_.steps[k].kernel.empty())
      st = cuda.check(
          cuda.cudaLibraryGetKernel(&kernels_[k], library_, program_.steps[k].kernel.c_str()),
          stepLabel(k, program_.steps[k]) + ": finding its kernel in the " + code_->target + " " +
              code_->format);
  // Past 48 KiB of dynamic shared memory a kernel must opt in.
  for (size_t k = 0; st && k < program_.steps.size(); ++k)
    if (kernels_[k] && program_.steps[k].dynamicShared > kDefaultSharedBytes)
      st = cuda.check(cuda.cudaFuncSetAttribute(reinterpret_cast<const void *>(kernels_[k]),
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(program_.steps[k].dynamicShared)),
                      stepLabel(k, program_.steps[k]) + ": allowing " +
                          std::to_string(program_.steps[k].dynamicShared) +
                          " bytes of dynamic shared memory");
  return st;
}

Status CudaDevice::allocate() {
  const CudaApi &cuda = *api_;
  const Program &program = program_;
  Status st = Status::ok();
  // Non-blocking: the legacy default stream (which a library or a plain
  // cudaMemcpy may use) must not order against the plan, or invalidate a
  // graph capture; the fork and join events order everything.
  for (uint32_t s = 0; s < program.numStreams && st; ++s) {
    cudaStream_t stream = nullptr;
    st = cuda.check(cuda.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                    "creating stream " + std::to_string(s));
    streams_.push_back(stream);
  }
  auto createEvents = [&](std::vector<cudaEvent_t> &events, size_t count, unsigned flags,
                          const char *what) {
    for (size_t e = 0; e < count && st; ++e) {
      cudaEvent_t event = nullptr;
      st = cuda.check(cuda.cudaEventCreateWithFlags(&event, flags), what);
      events.push_back(event);
    }
  };
  createEvents(events_, program.numEvents, cudaEventDisableTiming, "creating an event");
  createEvents(forkJoinEvents_, program.numStreams, cudaEventDisableTiming,
               "creating a fork/join event");
  // Timing events only when asked: two per step cost a record each and a
  // read-back after every run.
  if (options_.stepTimings)
    createEvents(timingEvents_, 1 + 2 * program.steps.size(), cudaEventDefault,
                 "creating a timing event");
  if (st && program.arenaBytes > 0)
    st = cuda.check(cuda.cudaMalloc(reinterpret_cast<void **>(&arena_), program.arenaBytes),
                    "allocating the " + std::to_string(program.arenaBytes) + "-byte arena");
  // Weights no value reads (a training step's initial states, which the
  // session holds on the host) stay off the GPU.
  std::vector<bool> read(program.weights.size(), false);
  for (const ValueDesc &v : program.values)
    if (v.kind == ValueKind::Weight)
      read[v.index] = true;
  for (const WeightDesc &w : program.weights) {
    if (!st)
      break;
    if (!read[weights_.size()]) {
      weights_.push_back(nullptr);
      continue;
    }
    uint8_t *copy = nullptr;
    st = cuda.check(cuda.cudaMalloc(reinterpret_cast<void **>(&copy), w.size ? w.size : 1),
                    "allocating weight " + w.name);
    weights_.push_back(copy);
    if (st && w.size)
      st = cuda.check(cuda.cudaMemcpy(copy, w.data, w.size, cudaMemcpyHostToDevice),
                      "copying weight " + w.name);
  }
  for (const TensorSpec &input : program.inputs) {
    if (!st)
      break;
    uint8_t *buffer = nullptr, *staging = nullptr;
    size_t bytes = static_cast<size_t>(input.byteSize());
    st = cuda.check(cuda.cudaMalloc(reinterpret_cast<void **>(&buffer), bytes ? bytes : 1),
                    "allocating input " + input.name);
    inputBuffers_.push_back(buffer);
    if (st)
      st = cuda.check(cuda.cudaMallocHost(reinterpret_cast<void **>(&staging), bytes ? bytes : 1),
                      "allocating pinned staging for input " + input.name);
    stagingIn_.push_back(staging);
  }
  for (const TensorSpec &output : program.outputs) {
    if (!st)
      break;
    uint8_t *staging = nullptr;
    size_t bytes = static_cast<size_t>(output.byteSize());
    st = cuda.check(cuda.cudaMallocHost(reinterpret_cast<void **>(&staging), bytes ? bytes : 1),
                    "allocating pinned staging for output " + output.name);
    stagingOut_.push_back(staging);
  }
  return st;
}

uint8_t *CudaDevice::deviceData(uint32_t value) const {
  const ValueDesc &v = program_.values[value];
  switch (v.kind) {
  case ValueKind::Input:
    return inputBuffers_[v.index];
  case ValueKind::Weight:
    return weights_[v.index];
  case ValueKind::Buffer:
    return arena_ + v.index;
  }
  return nullptr;
}

Status CudaDevice::makeCurrent() const {
  // The current GPU is per host thread: a session may run on another
  // thread than the one that created it, or after another session chose
  // another GPU.
  return api_->check(api_->cudaSetDevice(options_.deviceOrdinal),
                     "selecting GPU cuda:" + std::to_string(options_.deviceOrdinal));
}

CudaDevice::~CudaDevice() {
  if (!api_)
    return;
  const CudaApi &cuda = *api_;
  makeCurrent();
  cuda.cudaDeviceSynchronize();
  graph_.reset();
  libraryCalls_.reset();
  dnnCalls_.reset();
  for (auto *events : {&events_, &forkJoinEvents_, &timingEvents_})
    for (cudaEvent_t e : *events)
      if (e)
        cuda.cudaEventDestroy(e);
  for (uint8_t *p : stagingIn_)
    if (p)
      cuda.cudaFreeHost(p);
  for (uint8_t *p : stagingOut_)
    if (p)
      cuda.cudaFreeHost(p);
  for (cudaStream_t s : streams_)
    if (s)
      cuda.cudaStreamDestroy(s);
  for (uint8_t *p : weights_)
    cuda.cudaFree(p);
  for (uint8_t *p : inputBuffers_)
    cuda.cudaFree(p);
  if (arena_)
    cuda.cudaFree(arena_);
  if (library_)
    cuda.cudaLibraryUnload(library_);
}

Status CudaDevice::recordTiming(size_t event, cudaStream_t stream, bool capturing) {
  if (timingEvents_.empty())
    return Status::ok();
  // Under capture a plain record makes no graph node, and the replay would
  // leave the event unrecorded: an external record is a node.
  return api_->check(api_->cudaEventRecordWithFlags(timingEvents_[event], stream,
                                                    capturing ? cudaEventRecordExternal
                                                              : cudaEventRecordDefault),
                     "recording a timing event");
}

Status CudaDevice::enqueueSchedule(bool capturing, size_t begin, size_t end) {
  const CudaApi &cuda = *api_;
  cudaStream_t origin = streams_[0];
  Status st = recordTiming(0, origin, capturing);
  // Fork: every stream starts after what stream 0 queued so far (the inputs).
  if (st && streams_.size() > 1)
    st = cuda.check(cuda.cudaEventRecord(forkJoinEvents_[0], origin), "forking the streams");
  for (size_t s = 1; st && s < streams_.size(); ++s)
    st = cuda.check(cuda.cudaStreamWaitEvent(streams_[s], forkJoinEvents_[0], 0),
                    "forking the streams");
  // (A wait for an event of a step before `begin` returns at once: those
  // steps ran before this call, here or on another device, whose events a
  // wait here never saw recorded.)
  for (size_t index = begin; st && index < end; ++index) {
    const StepDesc &step = program_.steps[index];
    cudaStream_t stream = streams_[step.stream];
    for (uint32_t e : step.waits)
      if (st)
        st = cuda.check(cuda.cudaStreamWaitEvent(stream, events_[e], 0),
                        stepLabel(index, step) + ": waiting for event e" + std::to_string(e));
    if (st)
      st = recordTiming(1 + 2 * index, stream, capturing);
    if (st)
      st = enqueueStep(index, stream);
    if (st)
      st = recordTiming(2 + 2 * index, stream, capturing);
    if (st && step.event >= 0)
      st = cuda.check(cuda.cudaEventRecord(events_[step.event], stream),
                      stepLabel(index, step) + ": signalling event e" +
                          std::to_string(step.event));
    if (st && options_.syncEachStep)
      st = cuda.check(cuda.cudaStreamSynchronize(stream),
                      stepLabel(index, step) + ": failed while running (--sync-each-step)");
  }
  // Join: stream 0 goes on only after every stream's last step.
  for (size_t s = 1; st && s < streams_.size(); ++s) {
    st = cuda.check(cuda.cudaEventRecord(forkJoinEvents_[s], streams_[s]), "joining the streams");
    if (st)
      st = cuda.check(cuda.cudaStreamWaitEvent(origin, forkJoinEvents_[s], 0),
                      "joining the streams");
  }
  return st;
}

Status CudaDevice::enqueueStep(size_t index, cudaStream_t stream) {
  const CudaApi &cuda = *api_;
  const StepDesc &step = program_.steps[index];
  if (isTransferStep(step)) {
    // Every buffer lives on the GPU: a transfer is one copy on the stream.
    size_t bytes = static_cast<size_t>(program_.values[step.outputs[0]].type.byteSize());
    if (bytes == 0)
      return Status::ok();
    return cuda.check(cuda.cudaMemcpyAsync(deviceData(step.outputs[0]),
                                           deviceData(step.inputs[0]), bytes,
                                           cudaMemcpyDeviceToDevice, stream),
                      stepLabel(index, step) + ": copying");
  }
  if (libraryCalls_->has(index))
    return libraryCalls_->run(index, stream);
  if (dnnCalls_->has(index)) {
    Status st = dnnCalls_->run(index, stream);
    if (!st || !dnnCalls_->runsEpilogueKernel(index))
      return st;
  }
  if (kernels_[index]) {
    std::vector<void *> pointers;
    for (uint32_t k : step.kernelInputs)
      pointers.push_back(deviceData(step.inputs[k]));
    for (uint32_t out : step.outputs)
      pointers.push_back(deviceData(out));
    std::vector<void *> args;
    for (void *&p : pointers)
      args.push_back(&p);
    // Then the sizes a kernel over symbolic sizes takes (long long each).
    for (const int64_t &size : step.kernelSizes)
      args.push_back(const_cast<int64_t *>(&size));
    std::string what = step.conv ? "launching its epilogue kernel " + step.kernel + " <<<"
                                 : std::string("launching <<<");
    return cuda.check(cuda.cudaLaunchKernel(reinterpret_cast<const void *>(kernels_[index]),
                                            dim3(step.grid), dim3(step.block), args.data(),
                                            step.dynamicShared, stream),
                      stepLabel(index, step) + ": " + what + std::to_string(step.grid) + ", " +
                          std::to_string(step.block) + ">>>");
  }
  return runOnHost(index, stream);
}

/// The host fallback: the step's stream delivers its inputs, the CPU
/// backend computes, the outputs go back on the same stream.
Status CudaDevice::runOnHost(size_t index, cudaStream_t stream) {
  const CudaApi &cuda = *api_;
  const StepDesc &step = program_.steps[index];
  std::string what = stepLabel(index, step);
  std::vector<std::vector<uint8_t>> hostIn, hostOut;
  Status st = Status::ok();
  for (uint32_t v : step.inputs) {
    hostIn.emplace_back(static_cast<size_t>(program_.values[v].type.byteSize()));
    if (st && !hostIn.back().empty())
      st = cuda.check(cuda.cudaMemcpyAsync(hostIn.back().data(), deviceData(v),
                                           hostIn.back().size(), cudaMemcpyDeviceToHost, stream),
                      what + ": copying an input to the host");
  }
  if (st)
    st = cuda.check(cuda.cudaStreamSynchronize(stream), what + ": waiting for its inputs");
  std::vector<const uint8_t *> in;
  std::vector<uint8_t *> out;
  for (uint32_t v : step.outputs)
    hostOut.emplace_back(static_cast<size_t>(program_.values[v].type.byteSize()));
  for (auto &b : hostIn)
    in.push_back(b.data());
  for (auto &b : hostOut)
    out.push_back(b.data());
  if (st)
    st = runStepOnCpu(program_, step, in, out);
  for (size_t k = 0; st && k < step.outputs.size(); ++k)
    if (!hostOut[k].empty())
      st = cuda.check(cuda.cudaMemcpyAsync(deviceData(step.outputs[k]), hostOut[k].data(),
                                           hostOut[k].size(), cudaMemcpyHostToDevice, stream),
                      what + ": copying an output to the device");
  // The host buffers die here: their copies must be done.
  if (st)
    st = cuda.check(cuda.cudaStreamSynchronize(stream), what + ": copying its outputs back");
  return st;
}

Status CudaDevice::run(const std::vector<std::vector<uint8_t>> &inputs,
                       std::vector<StepTiming> *timings, size_t begin, size_t end) {
  const CudaApi &cuda = *api_;
  end = std::min(end, program_.steps.size());
  if ((begin != 0 || end != program_.steps.size()) && options_.cudaGraph)
    return Status::error("--cuda-graph captures whole runs"); // refused at Session::create
  if (Status st = makeCurrent(); !st)
    return st;
  cudaStream_t origin = streams_[0];
  // On an error, let what was queued finish before anyone reuses buffers.
  bool finished = false;
  struct DrainOnError {
    const CudaApi &cuda;
    bool &finished;
    ~DrainOnError() {
      if (!finished)
        cuda.cudaDeviceSynchronize();
    }
  } drain{cuda, finished};
  Status st = Status::ok();
  for (size_t k = 0; st && k < inputs.size(); ++k)
    if (!inputs[k].empty()) {
      std::memcpy(stagingIn_[k], inputs[k].data(), inputs[k].size());
      st = cuda.check(cuda.cudaMemcpyAsync(inputBuffers_[k], stagingIn_[k], inputs[k].size(),
                                           cudaMemcpyHostToDevice, origin),
                      "copying input '" + program_.inputs[k].name + "' to the GPU");
    }
  // With --cuda-graph: the first run eagerly (the driver loads modules
  // lazily, which a capture cannot do), the second captures, later ones
  // replay.
  if (st && options_.cudaGraph && runs_ >= 1 && !graph_) {
    auto graph = CudaGraph::capture(cuda, origin,
                                    [&] { return enqueueSchedule(true, 0, program_.steps.size()); });
    if (!graph)
      return graph.status();
    graph_ = std::move(*graph);
  }
  if (st)
    st = graph_ ? graph_->launch(origin) : enqueueSchedule(false, begin, end);
  // The outputs once the last step has run.
  for (size_t k = 0; st && end == program_.steps.size() && k < program_.outputValues.size(); ++k) {
    size_t bytes = static_cast<size_t>(program_.outputs[k].byteSize());
    if (bytes)
      st = cuda.check(cuda.cudaMemcpyAsync(stagingOut_[k], deviceData(program_.outputValues[k]),
                                           bytes, cudaMemcpyDeviceToHost, origin),
                      "copying output '" + program_.outputs[k].name + "' to the host");
  }
  if (!st)
    return st;
  st = cuda.check(cuda.cudaStreamSynchronize(origin),
                  "running the executable on the GPU (an asynchronous error from one of its " +
                      std::to_string(program_.steps.size()) +
                      " steps; --sync-each-step names the step)");
  finished = true;
  ++runs_;
  if (st && timings)
    st = readTimings(*timings, begin, end);
  return st;
}

Status CudaDevice::copyValue(const Device &from, uint32_t value) {
  const auto *other = dynamic_cast<const CudaDevice *>(&from);
  uint64_t bytes = 0;
  std::string why =
      other && other->options_.deviceOrdinal == options_.deviceOrdinal
          ? whyNotCopyable(program_, other->program_, value, bytes)
          : "value #" + std::to_string(value) + " comes from another device";
  if (!why.empty())
    return Status::error(why);
  if (Status st = makeCurrent(); !st || bytes == 0)
    return st;
  // Both arenas are on this GPU and the other device's run has finished;
  // queued on stream 0, before the next run's fork, which every stream
  // waits for (the plan's streams do not wait for the legacy stream).
  return api_->check(api_->cudaMemcpyAsync(deviceData(value), other->deviceData(value), bytes,
                                           cudaMemcpyDeviceToDevice, streams_[0]),
                     "copying value #" + std::to_string(value) + " between size signatures");
}

Status CudaDevice::readI64(uint32_t value, int64_t element, int64_t &out) const {
  if (std::string why = whyNotI64Element(program_, value, element); !why.empty())
    return Status::error(why);
  if (Status st = makeCurrent(); !st)
    return st;
  return api_->check(api_->cudaMemcpy(&out, deviceData(value) + 8 * element, 8,
                                      cudaMemcpyDeviceToHost),
                     "reading a length computed on the GPU");
}

Status CudaDevice::readTimings(std::vector<StepTiming> &timings, size_t begin,
                               size_t end) const {
  const CudaApi &cuda = *api_;
  timings.clear();
  if (timingEvents_.empty())
    return Status::error("step timings were not asked for when the session was created");
  for (size_t index = begin; index < end; ++index) {
    const StepDesc &step = program_.steps[index];
    float startMs = 0, endMs = 0;
    Status st = cuda.check(cuda.cudaEventElapsedTime(&startMs, timingEvents_[0],
                                                     timingEvents_[1 + 2 * index]),
                           "timing " + stepLabel(index, step));
    if (st)
      st = cuda.check(cuda.cudaEventElapsedTime(&endMs, timingEvents_[0],
                                                timingEvents_[2 + 2 * index]),
                      "timing " + stepLabel(index, step));
    if (!st)
      return st;
    timings.push_back({index, step.name, static_cast<int>(step.stream), 1000.0 * startMs,
                       1000.0 * endMs, stepCategory(step)});
  }
  return Status::ok();
}

const uint8_t *CudaDevice::outputData(size_t index) const {
  return index < stagingOut_.size() ? stagingOut_[index] : nullptr;
}

std::string CudaDevice::describe() const {
  const CudaApi &cuda = *api_;
  makeCurrent();
  int runtimeVersion = 0, driverVersion = 0;
  cuda.cudaRuntimeGetVersion(&runtimeVersion);
  cuda.cudaDriverGetVersion(&driverVersion);
  auto version = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  std::string s = "device cuda:" + std::to_string(options_.deviceOrdinal) + " " + gpuName_ +
                  ", sm_" + std::to_string(arch_) + "\n";
  s += "  CUDA runtime " + version(runtimeVersion) + ", driver " + version(driverVersion) + "\n";
  s += "  code: " + (code_ ? code_->target + " " + code_->format : std::string("none (no kernels)")) +
       "\n";
  s += "  streams: " + std::to_string(streams_.size()) + " (non-blocking)" +
       (options_.cudaGraph ? ", replayed as a CUDA graph" : "") + "\n";
  for (size_t k = 0; k < program_.steps.size(); ++k) {
    std::string call = libraryCalls_->has(k) ? libraryCalls_->describe(k)
                       : dnnCalls_->has(k)   ? dnnCalls_->describe(k)
                                             : "";
    if (!call.empty())
      s += "  step #" + std::to_string(k) + ": " + call + "\n";
  }
  for (const auto &[what, path] : loadedVendorLibraries())
    s += "  loaded " + what + ": " + path + "\n";
  return s;
}

} // namespace rt
} // namespace kiln

#else // no CUDA headers at build time

namespace kiln {
namespace rt {

Result<std::unique_ptr<Device>> createCudaDevice(const Program &, const SessionOptions &) {
  return Status::error("--device=cuda: this kiln was built without the CUDA toolkit; use "
                       "--device=cpu or --device=cuda-emu");
}

} // namespace rt
} // namespace kiln

#endif
