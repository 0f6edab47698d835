//===- FakeCudart.cpp - a CUDA runtime without a GPU, for tests -----------===//
//
// Built as libcudart.so.13 in the build tree only, never installed. The
// runtime's CUDA device opens it through $KILN_CUDA_LIBRARY_PATH, so its
// paths run on a machine without a GPU: selecting a device, refusing code
// for another architecture, streams, events, copies, capture and replay,
// and every error path. Memory is host memory; copies copy; a kernel launch
// checks its handle and records itself, but computes nothing (there is no
// GPU to run it: outputs of kernel steps are not meaningful, the tests read
// only what the runtime did and said). What it enforces, as CUDA does:
//   - cudaEventElapsedTime needs both events recorded and timing-enabled;
//     a plain cudaEventRecord under stream capture makes no graph node, so
//     it records nothing on replay (cudaEventRecordExternal does).
//   - under capture, a synchronizing call fails the capture, as does work
//     on the legacy default stream (CUDA fails it only when a blocking
//     stream captures; kiln's streams never block, so any is a mistake); a
//     capturing stream may wait only for events recorded in the capture; a
//     forked stream must rejoin the origin.
// Not thread-safe: the CUDA device calls CUDA from the session's thread.
// Environment:
//   KILN_FAKE_CUDA_DEVICES=N     how many GPUs (default 1; 0 for none)
//   KILN_FAKE_CUDA_ARCH=90       their compute capability
//   KILN_FAKE_CUDA_LOG=FILE      one line per call that matters, appended
//   KILN_FAKE_CUDA_FAIL=F:N[:async],...  the N-th call of F fails
//     (cudaErrorLaunchFailure); with :async it succeeds and the next
//     synchronization reports cudaErrorIllegalAddress, as a faulting
//     kernel does.
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/DeviceLimits.h" // the limits the fake enforces, as a GPU does

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  double time = 0;
  CUstream_st *recordedBy = nullptr; ///< under capture
  size_t mark = 0;                   ///< the stream's op count when recorded
};

struct CUstream_st {
  unsigned flags = 0;
  bool capturing = false; ///< the origin, or joined to its capture
  size_t ops = 0;         ///< operations queued during the capture
  size_t joinedAt = 0;    ///< ops the origin has waited for
};

struct CUkern_st {
  std::string name;
  unsigned maxDynamicShared = kiln::rt::kDefaultSharedBytes; ///< cudaFuncAttributeMaxDynamicSharedMemorySize
};

struct CUlib_st {
  const char *code;
  size_t size;
  std::vector<CUkern_st *> kernels;
};

struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};

struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
};

namespace {

double fakeClock = 0; ///< fake time, in ms: each operation takes 1 us
cudaError_t pending = cudaSuccess; ///< an asynchronous error, until synchronized
CUstream_st *captureOrigin = nullptr;
CUgraph_st *captureGraph = nullptr;
cudaError_t captureError = cudaSuccess;
std::set<const void *> kernels;
std::set<CUstream_st *> streams;
std::set<CUevent_st *> events;
int currentDevice = 0;

int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

void log(const std::string &line) {
  const char *path = std::getenv("KILN_FAKE_CUDA_LOG");
  if (!path)
    return;
  if (FILE *f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

/// Whether this call of `function` is one KILN_FAKE_CUDA_FAIL names.
cudaError_t injected(const char *function) {
  static std::map<std::string, int> calls;
  const char *spec = std::getenv("KILN_FAKE_CUDA_FAIL");
  int n = ++calls[function];
  if (!spec)
    return cudaSuccess;
  std::string all = spec;
  size_t start = 0;
  while (start <= all.size()) {
    size_t end = all.find(',', start);
    std::string item = all.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t colon = item.find(':');
    if (colon != std::string::npos && item.substr(0, colon) == function) {
      std::string rest = item.substr(colon + 1);
      bool async = rest.size() > 6 && rest.compare(rest.size() - 6, 6, ":async") == 0;
      if (std::atoi(rest.c_str()) == n) {
        log(std::string("injected failure: ") + function + " call " + std::to_string(n) +
            (async ? " (asynchronous)" : ""));
        if (!async)
          return cudaErrorLaunchFailure;
        pending = cudaErrorIllegalAddress;
        return cudaSuccess;
      }
    }
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return cudaSuccess;
}

/// Work queued on `stream`: run now, or become a node of the capture.
cudaError_t enqueue(cudaStream_t stream, const std::function<void()> &work) {
  if (captureOrigin) {
    if (!stream) { // the legacy stream inside a thread-local capture
      captureError = cudaErrorStreamCaptureImplicit;
      return captureError;
    }
    if (stream->capturing) {
      ++stream->ops;
      captureGraph->nodes.push_back(work);
      return cudaSuccess;
    }
    // Legal, but in a schedule meant for the graph it would run once, now,
    // and never on replay: the tests look for this line.
    log("work queued outside the capture");
  }
  work();
  return cudaSuccess;
}

/// A call that synchronizes: forbidden under capture.
cudaError_t synchronizing(const char *what) {
  if (captureOrigin) {
    log(std::string(what) + " under capture");
    captureError = cudaErrorStreamCaptureUnsupported;
    return captureError;
  }
  cudaError_t e = pending;
  pending = cudaSuccess;
  return e;
}

} // namespace

extern "C" {

cudaError_t cudaRuntimeGetVersion(int *v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count) {
  *count = envInt("KILN_FAKE_CUDA_DEVICES", 1);
  return *count == 0 ? cudaErrorNoDevice : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  log("cudaSetDevice " + std::to_string(device));
  if (device < 0 || device >= envInt("KILN_FAKE_CUDA_DEVICES", 1))
    return cudaErrorInvalidDevice;
  currentDevice = device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
  int arch = envInt("KILN_FAKE_CUDA_ARCH", 90);
  *value = attr == cudaDevAttrComputeCapabilityMajor   ? arch / 10
           : attr == cudaDevAttrComputeCapabilityMinor ? arch % 10
                                                       : 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  log("cudaGetDeviceProperties " + std::to_string(device));
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "kiln fake GPU %d", device);
  int arch = envInt("KILN_FAKE_CUDA_ARCH", 90);
  prop->major = arch / 10;
  prop->minor = arch % 10;
  prop->multiProcessorCount = 132;
  prop->totalGlobalMem = size_t(80) << 30;
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorLaunchFailure:
    return "unspecified launch failure";
  case cudaErrorIllegalAddress:
    return "an illegal memory access was encountered";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureImplicit:
    return "operation would make the legacy stream depend on a capturing blocking stream";
  case cudaErrorStreamCaptureUnjoined:
    return "capture sequence contains a fork that was not joined to the primary stream";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorSymbolNotFound:
    return "named symbol not found";
  case cudaErrorInvalidKernelImage:
    return "device kernel image is invalid";
  case cudaErrorInvalidDeviceFunction:
    return "invalid device function";
  default:
    return "fake CUDA error";
  }
}

cudaError_t cudaMalloc(void **p, size_t size) {
  if (captureOrigin)
    return synchronizing("cudaMalloc");
  if (cudaError_t e = injected("cudaMalloc"))
    return e;
  *p = std::calloc(1, size ? size : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p) {
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t size) { return cudaMalloc(p, size); }

cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
  if (cudaError_t e = synchronizing("cudaMemcpy"))
    return e;
  std::memcpy(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  log("cudaMemcpyAsync kind " + std::to_string(kind) + " on " +
      (stream ? "a stream" : "the legacy stream"));
  if (cudaError_t e = injected("cudaMemcpyAsync"))
    return e;
  return enqueue(stream, [=] { std::memcpy(dst, src, count); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
  log("cudaStreamCreateWithFlags " + std::to_string(flags));
  *stream = new CUstream_st;
  (*stream)->flags = flags;
  streams.insert(*stream);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  streams.erase(stream);
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  log("cudaStreamSynchronize");
  if (cudaError_t e = injected("cudaStreamSynchronize"))
    return e;
  return synchronizing("cudaStreamSynchronize");
}

cudaError_t cudaDeviceSynchronize() {
  log("cudaDeviceSynchronize");
  return synchronizing("cudaDeviceSynchronize");
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags) {
  log("cudaEventCreateWithFlags " + std::to_string(flags));
  *event = new CUevent_st;
  (*event)->flags = flags;
  events.insert(*event);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  events.erase(event);
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned flags) {
  log(std::string("cudaEventRecord") + (flags & cudaEventRecordExternal ? " external" : "") +
      (captureOrigin ? " under capture" : ""));
  if (captureOrigin && stream && stream->capturing) {
    event->recordedBy = stream;
    event->mark = stream->ops;
    // A plain record under capture only orders the capture: the event is
    // captured, no node records it, and timing it fails (as CUDA's does).
    // An external record is a node: each replay records it.
    event->recorded = false;
    if (flags & cudaEventRecordExternal) {
      ++stream->ops;
      captureGraph->nodes.push_back([event] {
        event->recorded = true;
        event->time = fakeClock;
      });
    }
    return cudaSuccess;
  }
  return enqueue(stream, [event] {
    event->recorded = true;
    event->time = fakeClock;
  });
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return cudaEventRecordWithFlags(event, stream, cudaEventRecordDefault);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags) {
  // A capturing stream may wait only for work inside its capture.
  if (captureOrigin && stream && stream->capturing && !event->recordedBy) {
    log("cudaStreamWaitEvent on an event recorded outside the capture");
    captureError = cudaErrorStreamCaptureIsolation;
    return captureError;
  }
  if (captureOrigin && event->recordedBy) {
    // Waiting on a captured event joins the capture.
    if (stream && !stream->capturing) {
      stream->capturing = true;
      stream->ops = stream->joinedAt = 0;
    }
    if (stream == captureOrigin && event->recordedBy != captureOrigin &&
        event->mark == event->recordedBy->ops)
      event->recordedBy->joinedAt = event->recordedBy->ops;
  }
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start->recorded || !end->recorded || (start->flags & cudaEventDisableTiming) ||
      (end->flags & cudaEventDisableTiming))
    return cudaErrorInvalidResourceHandle;
  *ms = static_cast<float>(end->time - start->time);
  return cudaSuccess;
}

cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code, cudaJitOption *,
                                void **, unsigned, cudaLibraryOption *, void **, unsigned) {
  if (cudaError_t e = injected("cudaLibraryLoadData"))
    return e;
  const char *text = static_cast<const char *>(code);
  bool cubin = std::memcmp(text, "\x7f" "ELF", 4) == 0;
  bool ptx = !cubin && std::strstr(text, ".version") != nullptr;
  log(std::string("cudaLibraryLoadData ") + (cubin ? "cubin" : ptx ? "ptx" : "unknown"));
  if (!cubin && !ptx)
    return cudaErrorInvalidKernelImage;
  size_t size = std::strlen(text);
  if (cubin) { // ELF64: the section header table ends the file
    uint64_t shoff;
    uint16_t shentsize, shnum;
    std::memcpy(&shoff, text + 0x28, 8);
    std::memcpy(&shentsize, text + 0x3a, 2);
    std::memcpy(&shnum, text + 0x3c, 2);
    size = shoff + size_t(shentsize) * shnum;
  }
  *library = new CUlib_st{text, size, {}};
  return cudaSuccess;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  for (CUkern_st *k : library->kernels) {
    kernels.erase(k);
    delete k;
  }
  delete library;
  return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t library, const char *name) {
  // The name must be in the code (a symbol of the cubin, an .entry of the PTX).
  if (!memmem(library->code, library->size, name, std::strlen(name)))
    return cudaErrorSymbolNotFound;
  auto *k = new CUkern_st{name};
  library->kernels.push_back(k);
  kernels.insert(k);
  *kernel = k;
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
                             cudaStream_t stream) {
  if (!kernels.count(func))
    return cudaErrorInvalidDeviceFunction;
  const auto *k = static_cast<const CUkern_st *>(func);
  log("launch " + k->name + " <<<" + std::to_string(grid.x) + ", " + std::to_string(block.x) +
      (shared ? ", " + std::to_string(shared) : std::string()) + ">>>" +
      (captureOrigin ? " under capture" : ""));
  if (cudaError_t e = injected("cudaLaunchKernel"))
    return e;
  // As on a GPU: past 48 KiB of dynamic shared memory the kernel must have
  // been allowed it first.
  if (shared > k->maxDynamicShared)
    return cudaErrorInvalidValue;
  std::string name = k->name;
  return enqueue(stream, [name] {
    fakeClock += 0.001;
    log("ran " + name);
  });
}

cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attribute, int value) {
  if (!kernels.count(func))
    return cudaErrorInvalidDeviceFunction;
  auto *k = const_cast<CUkern_st *>(static_cast<const CUkern_st *>(func));
  log("cudaFuncSetAttribute " + k->name + " " + std::to_string(attribute) + " " +
      std::to_string(value));
  if (cudaError_t e = injected("cudaFuncSetAttribute"))
    return e;
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      static_cast<unsigned>(value) > kiln::rt::kMaxSharedBytesSm90)
    return cudaErrorInvalidValue;
  k->maxDynamicShared = static_cast<unsigned>(value);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  log("cudaStreamBeginCapture");
  if (!stream)
    return cudaErrorStreamCaptureUnsupported; // the legacy stream cannot be captured
  captureOrigin = stream;
  captureGraph = new CUgraph_st;
  captureError = cudaSuccess;
  stream->capturing = true;
  stream->ops = stream->joinedAt = 0;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  log("cudaStreamEndCapture");
  cudaError_t error = captureError;
  if (stream != captureOrigin)
    error = cudaErrorIllegalState;
  *graph = nullptr;
  // Every stream that joined must have rejoined the origin after its last work.
  for (CUstream_st *s : streams) {
    if (s != stream && s->capturing && s->ops > s->joinedAt && error == cudaSuccess)
      error = cudaErrorStreamCaptureUnjoined;
    s->capturing = false;
  }
  for (CUevent_st *e : events)
    e->recordedBy = nullptr;
  if (error == cudaSuccess)
    *graph = captureGraph;
  else
    delete captureGraph;
  captureGraph = nullptr;
  captureOrigin = nullptr;
  stream->capturing = false;
  return error;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  log("cudaGraphLaunch (" + std::to_string(exec->nodes.size()) + " nodes)");
  if (cudaError_t e = injected("cudaGraphLaunch"))
    return e;
  for (auto &node : exec->nodes)
    node();
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

} // extern "C"
