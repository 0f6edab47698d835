//===- CudaApi.h - the CUDA runtime, opened at run time ---------*- C++ -*-===//
//
// The CUDA runtime functions kiln uses, resolved from libcudart with dlopen
// when a session asks for a GPU: the header gives their types, nothing
// links against libcudart, so every kiln binary starts on a machine without
// the toolkit or a driver. Only the CUDA device's files include this.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDAAPI_H
#define KILN_LIB_RUNTIME_CUDAAPI_H

#include "Program.h"
#include "SharedLibrary.h"

#include <cuda_runtime_api.h>

#include <memory>

namespace kiln {
namespace rt {

#define KILN_CUDA_FUNCTIONS(X)                                                                 \
  X(cudaRuntimeGetVersion) X(cudaDriverGetVersion) X(cudaGetDeviceCount) X(cudaSetDevice)         \
  X(cudaDeviceGetAttribute) X(cudaGetDeviceProperties) X(cudaGetErrorString)                      \
  X(cudaMalloc) X(cudaFree) X(cudaMemcpy) X(cudaMemcpyAsync) X(cudaMallocHost)                    \
  X(cudaFreeHost) X(cudaStreamCreateWithFlags) X(cudaStreamDestroy) X(cudaStreamSynchronize)      \
  X(cudaStreamWaitEvent) X(cudaEventCreateWithFlags) X(cudaEventRecord)                           \
  X(cudaEventRecordWithFlags) X(cudaEventElapsedTime) X(cudaEventDestroy)                         \
  X(cudaDeviceSynchronize) X(cudaLibraryLoadData) X(cudaLibraryUnload) X(cudaLibraryGetKernel)    \
  X(cudaLaunchKernel) X(cudaFuncSetAttribute) X(cudaStreamBeginCapture)                           \
  X(cudaStreamEndCapture) X(cudaGraphInstantiate) X(cudaGraphLaunch) X(cudaGraphDestroy)          \
  X(cudaGraphExecDestroy)

struct CudaApi {
  SharedLibrary library;
#define KILN_DECLARE(name) decltype(&::name) name = nullptr;
  KILN_CUDA_FUNCTIONS(KILN_DECLARE)
#undef KILN_DECLARE

  /// Opens libcudart (SharedLibrary's search) and resolves every function;
  /// the error says what was looked for and where.
  static Result<std::unique_ptr<CudaApi>> open();

  /// Ok, or "what: the CUDA error string (CUDA error N)".
  Status check(cudaError_t error, const std::string &what) const;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDAAPI_H
