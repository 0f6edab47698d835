//===- CudnnCalls.h - a plan's cuDNN convolutions on a GPU ------*- C++ -*-===//
//
// cuDNN is opened with dlopen when an executable has cuDNN steps. Each
// step's ConvCall becomes an operation graph of the backend API
// (convolution, then the pointwise bias add and ReLU on virtual tensors),
// and one engine configuration is chosen at load: the heuristic's first
// whose notes the options allow (no TF32 down-conversion of f32 inputs
// unless allowed, no reduced-precision reduction, nothing nondeterministic
// under --deterministic) and whose workspace fits the planned one. A run is
// one cudnnBackendExecute on the step's stream.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDNNCALLS_H
#define KILN_LIB_RUNTIME_CUDNNCALLS_H

#include "Program.h"

#include <functional>
#include <memory>

namespace kiln {
namespace rt {

class CudnnCalls {
public:
  using Address = std::function<uint8_t *(uint32_t value)>;

  static Result<std::unique_ptr<CudnnCalls>> create(const Program &program,
                                                    const Address &address, uint8_t *arena);
  ~CudnnCalls();

  bool has(size_t step) const;
  /// Queues step `index`'s graph on `stream` (a cudaStream_t).
  Status run(size_t index, void *stream) const;

  struct Api;
  struct Call;

private:
  CudnnCalls() = default;
  std::unique_ptr<Api> api_;
  void *handle_ = nullptr; ///< cudnnHandle_t
  std::vector<std::unique_ptr<Call>> calls_;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUDNNCALLS_H
