//===- CudaDevice.cpp - steps on a GPU ------------------------------------===//

#include "CudaDevice.h"

#include <cstring>
#include <string>

#ifdef KILN_RUNTIME_HAVE_CUDA
#include <cuda_runtime_api.h>
#include "SharedLibrary.h"
#endif

namespace kiln {
namespace rt {

#ifdef KILN_RUNTIME_HAVE_CUDA

// The CUDA runtime functions kiln uses, resolved from libcudart at run time
// (the header gives their types; nothing links against libcudart).
#define KILN_CUDA_FUNCTIONS(X)                                                                 \
  X(cudaGetDeviceCount) X(cudaSetDevice) X(cudaDeviceGetAttribute) X(cudaGetErrorString)       \
  X(cudaMalloc) X(cudaFree) X(cudaMemcpy) X(cudaMemcpyAsync) X(cudaStreamCreateWithFlags)      \
  X(cudaStreamDestroy)    \
  X(cudaStreamSynchronize) X(cudaStreamWaitEvent) X(cudaEventCreateWithFlags)                  \
  X(cudaEventRecord) X(cudaEventDestroy) X(cudaDeviceSynchronize) X(cudaLibraryLoadData)       \
  X(cudaLibraryUnload) X(cudaLibraryGetKernel) X(cudaLaunchKernel) X(cudaEventElapsedTime)       \
  X(cudaMallocHost) X(cudaFreeHost) X(cudaStreamBeginCapture) X(cudaStreamEndCapture)          \
  X(cudaGraphInstantiate) X(cudaGraphLaunch) X(cudaGraphDestroy) X(cudaGraphExecDestroy)

struct CudaDevice::Api {
  SharedLibrary library;
#define KILN_DECLARE(name) decltype(&::name) name = nullptr;
  KILN_CUDA_FUNCTIONS(KILN_DECLARE)
#undef KILN_DECLARE
  /// "what: the CUDA error string".
  Status check(cudaError_t error, const std::string &what) const {
    if (error == cudaSuccess)
      return Status::ok();
    return Status::error(what + ": " + (cudaGetErrorString ? cudaGetErrorString(error) : "?") +
                         " (CUDA error " + std::to_string(static_cast<int>(error)) + ")");
  }
};

namespace {

Result<std::unique_ptr<CudaDevice::Api>> openRuntime() {
  auto api = std::make_unique<CudaDevice::Api>();
  std::string why = api->library.open({"libcudart.so.13", "libcudart.so"});
  if (!why.empty())
    return Status::error("--device=cuda needs the CUDA runtime (libcudart.so.13), which is not "
                         "installed here: " + why + "; use --device=cpu or --device=cuda-emu");
#define KILN_RESOLVE(name)                                                                     \
  if (!api->library.resolve(#name, api->name))                                                 \
    return Status::error("the CUDA runtime lacks " #name);
  KILN_CUDA_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
  return api;
}

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

Result<std::unique_ptr<CudaDevice>> CudaDevice::create(const Program &program, bool cudaGraph) {
  if (cudaGraph)
    for (size_t k = 0; k < program.steps.size(); ++k) {
      const StepDesc &step = program.steps[k];
      bool transfer = step.ops.size() == 1 && step.ops[0].name == "kiln.transfer";
      if (!transfer && step.kernel.empty() && !step.gemm && !step.conv)
        return Status::error("--cuda-graph: step #" + std::to_string(k) + " (" + step.name +
                             ") runs on the host, which a CUDA graph cannot capture; run "
                             "without --cuda-graph");
    }
  auto api = openRuntime();
  if (!api)
    return api.status();
  std::unique_ptr<CudaDevice> device(new CudaDevice());
  device->api_ = std::move(*api);
  device->graphMode_ = cudaGraph;
  const Api &cuda = *device->api_;

  int count = 0;
  cudaError_t error = cuda.cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0)
    return Status::error(
        std::string("--device=cuda: no usable GPU here (") +
        (error != cudaSuccess ? cuda.cudaGetErrorString(error) : "no CUDA devices") +
        "); use --device=cpu or --device=cuda-emu");
  Status st = cuda.check(cuda.cudaSetDevice(0), "cudaSetDevice");
  int major = 0, minor = 0;
  if (st)
    st = cuda.check(cuda.cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0),
                    "compute capability");
  if (st)
    st = cuda.check(cuda.cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0),
                    "compute capability");
  if (!st)
    return st;
  int arch = major * 10 + minor;

  // The kernels: the cubin for this GPU, else the newest PTX it can JIT.
  bool anyKernel = false;
  for (const StepDesc &step : program.steps)
    anyKernel |= !step.kernel.empty();
  if (anyKernel) {
    const DeviceCodeDesc *chosen = nullptr;
    int chosenArch = -1;
    std::string available;
    for (const DeviceCodeDesc &code : program.deviceCode) {
      int codeArch = archNumber(code.target);
      if (codeArch < 0)
        continue;
      available += (available.empty() ? "" : ", ") + code.target + " " + code.format;
      if (code.size == 0)
        continue;
      // Architecture-specific code (sm_90a) runs only on that architecture.
      bool specific = code.target.find_first_of("af", 3) != std::string::npos;
      if (code.format == "cubin" && codeArch == arch) {
        chosen = &code;
        break;
      }
      bool terminated = code.data[code.size - 1] == '\0'; // PTX is text
      if (code.format == "ptx" && terminated && !specific && codeArch <= arch &&
          codeArch > chosenArch) {
        chosen = &code;
        chosenArch = codeArch;
      }
    }
    if (!chosen)
      return Status::error("this GPU is sm_" + std::to_string(arch) +
                           " but the executable has code only for: " +
                           (available.empty() ? std::string("none") : available) +
                           "; recompile with kilnc --target=cuda --arch=sm_" +
                           std::to_string(arch));
    cudaLibrary_t library = nullptr;
    st = cuda.check(cuda.cudaLibraryLoadData(&library, chosen->data, nullptr, nullptr, 0, nullptr,
                                             nullptr, 0),
                    "loading the " + chosen->target + " " + chosen->format);
    if (!st)
      return st;
    device->library_ = library;
  }
  for (const StepDesc &step : program.steps) {
    void *kernel = nullptr;
    if (!step.kernel.empty()) {
      cudaKernel_t k = nullptr;
      st = cuda.check(cuda.cudaLibraryGetKernel(&k, static_cast<cudaLibrary_t>(device->library_),
                                                step.kernel.c_str()),
                      "kernel " + step.kernel);
      if (!st)
        return st;
      kernel = reinterpret_cast<void *>(k);
    }
    device->kernels_.push_back(kernel);
  }

  // Streams, events and memory.
  for (uint32_t s = 0; s < program.numStreams && st; ++s) {
    cudaStream_t stream = nullptr;
    // Blocking streams: they order against the default stream, which
    // carries the synchronous host-device copies.
    st = cuda.check(cuda.cudaStreamCreateWithFlags(&stream, cudaStreamDefault), "stream");
    device->streams_.push_back(stream);
  }
  for (uint32_t e = 0; e < program.numEvents && st; ++e) {
    cudaEvent_t event = nullptr;
    st = cuda.check(cuda.cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event");
    device->events_.push_back(event);
  }
  // A graph capture forks from stream 0 and joins back to it.
  for (uint32_t e = 0; cudaGraph && e < program.numStreams && st; ++e) {
    cudaEvent_t event = nullptr;
    st = cuda.check(cuda.cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event");
    device->forkJoinEvents_.push_back(event);
  }
  // Timing events: the run's start, and each step's start and end, for
  // per-step timings and --trace.
  for (size_t e = 0; e < 1 + 2 * program.steps.size() && st; ++e) {
    cudaEvent_t event = nullptr;
    st = cuda.check(cuda.cudaEventCreateWithFlags(&event, cudaEventDefault), "timing event");
    device->timingEvents_.push_back(event);
  }
  if (st && program.arenaBytes > 0)
    st = cuda.check(cuda.cudaMalloc(reinterpret_cast<void **>(&device->arena_), program.arenaBytes),
                    "allocating the " + std::to_string(program.arenaBytes) + "-byte arena");
  for (const WeightDesc &w : program.weights) {
    if (!st)
      break;
    uint8_t *copy = nullptr;
    st = cuda.check(cuda.cudaMalloc(reinterpret_cast<void **>(&copy), w.size ? w.size : 1),
                    "allocating weight " + w.name);
    device->weights_.push_back(copy);
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
    device->inputBuffers_.push_back(buffer);
    if (st)
      st = cuda.check(cuda.cudaMallocHost(reinterpret_cast<void **>(&staging), bytes ? bytes : 1),
                      "allocating pinned staging for input " + input.name);
    device->stagingIn_.push_back(staging);
  }
  for (const TensorSpec &output : program.outputs) {
    if (!st)
      break;
    uint8_t *staging = nullptr;
    size_t bytes = static_cast<size_t>(output.byteSize());
    st = cuda.check(cuda.cudaMallocHost(reinterpret_cast<void **>(&staging), bytes ? bytes : 1),
                    "allocating pinned staging for output " + output.name);
    device->stagingOut_.push_back(staging);
  }
  if (!st)
    return st;
  auto libraryCalls = CublasLtCalls::create(
      program, [&](uint32_t value) { return device->deviceData(program, value); }, device->arena_);
  if (!libraryCalls)
    return libraryCalls.status();
  device->libraryCalls_ = std::move(*libraryCalls);
  auto dnnCalls = CudnnCalls::create(
      program, [&](uint32_t value) { return device->deviceData(program, value); }, device->arena_);
  if (!dnnCalls)
    return dnnCalls.status();
  device->dnnCalls_ = std::move(*dnnCalls);
  return device;
}

uint8_t *CudaDevice::deviceData(const Program &program, uint32_t value) const {
  const ValueDesc &v = program.values[value];
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

CudaDevice::~CudaDevice() {
  if (!api_)
    return;
  const Api &cuda = *api_;
  cuda.cudaDeviceSynchronize();
  libraryCalls_.reset();
  dnnCalls_.reset();
  for (void *e : events_)
    if (e)
      cuda.cudaEventDestroy(static_cast<cudaEvent_t>(e));
  for (void *e : timingEvents_)
    if (e)
      cuda.cudaEventDestroy(static_cast<cudaEvent_t>(e));
  for (void *e : forkJoinEvents_)
    if (e)
      cuda.cudaEventDestroy(static_cast<cudaEvent_t>(e));
  if (graphExec_)
    cuda.cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graphExec_));
  for (uint8_t *p : stagingIn_)
    if (p)
      cuda.cudaFreeHost(p);
  for (uint8_t *p : stagingOut_)
    if (p)
      cuda.cudaFreeHost(p);
  for (void *s : streams_)
    if (s)
      cuda.cudaStreamDestroy(static_cast<cudaStream_t>(s));
  for (uint8_t *p : weights_)
    cuda.cudaFree(p);
  for (uint8_t *p : inputBuffers_)
    cuda.cudaFree(p);
  if (arena_)
    cuda.cudaFree(arena_);
  if (library_)
    cuda.cudaLibraryUnload(static_cast<cudaLibrary_t>(library_));
}

/// Queues every step on the plan's streams, with timing events around each.
Status CudaDevice::enqueueSteps(const Program &program) {
  const Api &cuda = *api_;
  auto timingEvent = [&](size_t k) { return static_cast<cudaEvent_t>(timingEvents_[k]); };
  auto deviceData = [&](uint32_t value) { return this->deviceData(program, value); };
  for (size_t index = 0; index < program.steps.size(); ++index) {
    const StepDesc &step = program.steps[index];
    std::string what = "step #" + std::to_string(index) + " (" + step.name + ")";
    auto stream = static_cast<cudaStream_t>(streams_[step.stream]);
    for (uint32_t e : step.waits) {
      Status st = cuda.check(cuda.cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(events_[e]), 0),
                             what + ": waiting");
      if (!st)
        return st;
    }
    Status timed = cuda.check(cuda.cudaEventRecord(timingEvent(1 + 2 * index), stream), what + ": timing");
    if (!timed)
      return timed;
    bool transfer = step.ops.size() == 1 && step.ops[0].name == "kiln.transfer" &&
                    step.inputs.size() == 1 && step.outputs.size() == 1;
    if (transfer) {
      // Every buffer lives on the GPU: a transfer is one copy on the stream.
      size_t bytes = static_cast<size_t>(program.values[step.outputs[0]].type.byteSize());
      Status st = bytes == 0 ? Status::ok()
                             : cuda.check(cuda.cudaMemcpyAsync(deviceData(step.outputs[0]),
                                                               deviceData(step.inputs[0]), bytes,
                                                               cudaMemcpyDeviceToDevice, stream),
                                          what + ": copying");
      if (!st)
        return st;
    } else if (libraryCalls_->has(index)) {
      Status st = libraryCalls_->run(index, stream);
      if (!st)
        return st;
    } else if (dnnCalls_->has(index)) {
      Status st = dnnCalls_->run(index, stream);
      if (!st)
        return st;
    } else if (kernels_[index]) {
      std::vector<void *> pointers;
      for (uint32_t k : step.kernelInputs)
        pointers.push_back(deviceData(step.inputs[k]));
      for (uint32_t out : step.outputs)
        pointers.push_back(deviceData(out));
      std::vector<void *> args;
      for (void *&p : pointers)
        args.push_back(&p);
      Status st = cuda.check(cuda.cudaLaunchKernel(kernels_[index], dim3(step.grid), dim3(step.block),
                                                   args.data(), 0, stream),
                             what + ": launching " + step.kernel);
      if (!st)
        return st;
    } else {
      // Host fallback: wait for the stream, compute on copies, copy back.
      Status st = cuda.check(cuda.cudaStreamSynchronize(stream), what);
      std::vector<std::vector<uint8_t>> hostIn, hostOut;
      std::vector<const uint8_t *> in;
      std::vector<uint8_t *> out;
      for (uint32_t v : step.inputs) {
        hostIn.emplace_back(static_cast<size_t>(program.values[v].type.byteSize()));
        if (st && !hostIn.back().empty())
          st = cuda.check(cuda.cudaMemcpy(hostIn.back().data(), deviceData(v), hostIn.back().size(),
                                          cudaMemcpyDeviceToHost),
                          what + ": copying an input to the host");
      }
      for (uint32_t v : step.outputs)
        hostOut.emplace_back(static_cast<size_t>(program.values[v].type.byteSize()));
      for (auto &b : hostIn)
        in.push_back(b.data());
      for (auto &b : hostOut)
        out.push_back(b.data());
      if (st)
        st = runStepOnCpu(program, step, in, out);
      for (size_t k = 0; st && k < step.outputs.size(); ++k)
        if (!hostOut[k].empty())
          st = cuda.check(cuda.cudaMemcpy(deviceData(step.outputs[k]), hostOut[k].data(),
                                          hostOut[k].size(), cudaMemcpyHostToDevice),
                          what + ": copying an output to the device");
      if (!st)
        return st;
    }
    timed = cuda.check(cuda.cudaEventRecord(timingEvent(2 + 2 * index), stream), what + ": timing");
    if (!timed)
      return timed;
    if (step.event >= 0) {
      Status st = cuda.check(cuda.cudaEventRecord(static_cast<cudaEvent_t>(events_[step.event]), stream),
                             what + ": signalling");
      if (!st)
        return st;
    }
  }
  return Status::ok();
}

Status CudaDevice::run(const Program &program, const std::vector<std::vector<uint8_t>> &inputs,
                       std::vector<std::vector<uint8_t>> &outputs,
                       std::vector<StepTiming> *timings) {
  const Api &cuda = *api_;
  auto timingEvent = [&](size_t k) { return static_cast<cudaEvent_t>(timingEvents_[k]); };
  // On an error, let what was queued finish before anyone reuses buffers.
  bool finished = false;
  struct DrainOnError {
    const Api &cuda;
    bool &finished;
    ~DrainOnError() {
      if (!finished)
        cuda.cudaDeviceSynchronize();
    }
  } drain{cuda, finished};
  // Inputs go through pinned staging buffers, so the copies are DMA on the
  // legacy default stream, which the plan's (blocking) streams wait for.
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!inputs[k].empty()) {
      std::memcpy(stagingIn_[k], inputs[k].data(), inputs[k].size());
      Status st = cuda.check(cuda.cudaMemcpyAsync(inputBuffers_[k], stagingIn_[k], inputs[k].size(),
                                                  cudaMemcpyHostToDevice, nullptr),
                             "copying input " + program.inputs[k].name);
      if (!st)
        return st;
    }
  auto stream0 = static_cast<cudaStream_t>(streams_[0]);
  if (!graphMode_) {
    Status st = cuda.check(cuda.cudaEventRecord(timingEvent(0), nullptr), "timing the run");
    if (st)
      st = enqueueSteps(program);
    if (!st)
      return st;
  } else {
    if (!graphExec_) {
      // Capture the whole schedule once: stream 0 starts the capture, the
      // other streams join it through an event and stream 0 waits for
      // them at the end, so the graph holds every stream's work.
      Status st = cuda.check(cuda.cudaStreamBeginCapture(stream0, cudaStreamCaptureModeThreadLocal),
                             "capturing a CUDA graph");
      if (st)
        st = cuda.check(cuda.cudaEventRecord(timingEvent(0), stream0), "timing the run");
      if (st)
        st = cuda.check(cuda.cudaEventRecord(static_cast<cudaEvent_t>(forkJoinEvents_[0]), stream0),
                        "forking the capture");
      for (size_t s = 1; st && s < streams_.size(); ++s)
        st = cuda.check(cuda.cudaStreamWaitEvent(static_cast<cudaStream_t>(streams_[s]),
                                                 static_cast<cudaEvent_t>(forkJoinEvents_[0]), 0),
                        "forking the capture");
      if (st)
        st = enqueueSteps(program);
      for (size_t s = 1; st && s < streams_.size(); ++s) {
        st = cuda.check(cuda.cudaEventRecord(static_cast<cudaEvent_t>(forkJoinEvents_[s]),
                                             static_cast<cudaStream_t>(streams_[s])),
                        "joining the capture");
        if (st)
          st = cuda.check(cuda.cudaStreamWaitEvent(stream0, static_cast<cudaEvent_t>(forkJoinEvents_[s]), 0),
                          "joining the capture");
      }
      cudaGraph_t graph = nullptr;
      Status ended = cuda.check(cuda.cudaStreamEndCapture(stream0, &graph), "capturing a CUDA graph");
      if (st)
        st = ended;
      if (st) {
        cudaGraphExec_t exec = nullptr;
        st = cuda.check(cuda.cudaGraphInstantiate(&exec, graph, 0), "instantiating the CUDA graph");
        graphExec_ = exec;
      }
      if (graph)
        cuda.cudaGraphDestroy(graph);
      if (!st)
        return st;
    }
    Status st = cuda.check(cuda.cudaGraphLaunch(static_cast<cudaGraphExec_t>(graphExec_), stream0),
                           "launching the CUDA graph");
    if (!st)
      return st;
  }
  // Results come back through pinned buffers on the legacy stream, which
  // waits for every blocking stream's work.
  outputs.resize(program.outputValues.size());
  for (size_t k = 0; k < program.outputValues.size(); ++k) {
    outputs[k].resize(static_cast<size_t>(program.outputs[k].byteSize()));
    if (outputs[k].empty())
      continue;
    Status st = cuda.check(cuda.cudaMemcpyAsync(stagingOut_[k], deviceData(program, program.outputValues[k]),
                                                outputs[k].size(), cudaMemcpyDeviceToHost, nullptr),
                           "copying output " + program.outputs[k].name);
    if (!st)
      return st;
  }
  Status st = cuda.check(cuda.cudaDeviceSynchronize(), "running the executable on the GPU");
  finished = true;
  for (size_t k = 0; st && k < outputs.size(); ++k)
    if (!outputs[k].empty())
      std::memcpy(outputs[k].data(), stagingOut_[k], outputs[k].size());
  if (st && timings) {
    // Device time of every step since the run's start.
    timings->clear();
    for (size_t index = 0; st && index < program.steps.size(); ++index) {
      float startMs = 0, endMs = 0;
      st = cuda.check(cuda.cudaEventElapsedTime(&startMs, timingEvent(0), timingEvent(1 + 2 * index)),
                      "timing step #" + std::to_string(index));
      if (st)
        st = cuda.check(cuda.cudaEventElapsedTime(&endMs, timingEvent(0), timingEvent(2 + 2 * index)),
                        "timing step #" + std::to_string(index));
      const StepDesc &step = program.steps[index];
      bool copy = step.ops.size() == 1 && step.ops[0].name == "kiln.transfer";
      timings->push_back({index, step.name, static_cast<int>(step.stream), 1000.0 * startMs,
                          1000.0 * endMs,
                          copy                         ? "copy"
                          : libraryCalls_->has(index) ? "cuBLASLt"
                          : dnnCalls_->has(index)     ? "cuDNN"
                          : kernels_[index]            ? "kernel"
                                                       : "host"});
    }
  }
  return st;
}

#else // no CUDA headers at build time

struct CudaDevice::Api {};

Result<std::unique_ptr<CudaDevice>> CudaDevice::create(const Program &, bool) {
  return Status::error("--device=cuda: this kiln was built without the CUDA toolkit; use "
                       "--device=cpu or --device=cuda-emu");
}

CudaDevice::~CudaDevice() = default;

uint8_t *CudaDevice::deviceData(const Program &, uint32_t) const { return nullptr; }

Status CudaDevice::enqueueSteps(const Program &) { return Status::error("no CUDA support"); }

Status CudaDevice::run(const Program &, const std::vector<std::vector<uint8_t>> &,
                       std::vector<std::vector<uint8_t>> &, std::vector<StepTiming> *) {
  return Status::error("no CUDA support in this build");
}

#endif

} // namespace rt
} // namespace kiln
