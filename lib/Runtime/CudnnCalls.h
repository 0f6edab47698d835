//===- CudnnCalls.h - a plan's cuDNN convolutions on a GPU ------*- C++ -*-===//
//
// cuDNN is opened with dlopen when an executable has cuDNN steps. Each
// step's ConvCall becomes an operation graph of the backend API
// (convolution, then the pointwise bias add and ReLU on virtual tensors),
// and one engine configuration is chosen at load: the first the instant
// heuristics offer, else the first of the fallback list, whose numerical
// notes the options allow (no Tensor Cores for f32 data, which would round
// it to TF32, unless --precision=tf32; no inputs down-converted; no
// reduced-precision reduction; nothing nondeterministic under
// --deterministic) and whose workspace fits the planned one. The tensors
// declare the alignment their device pointers really have. A run is one
// cudnnBackendExecute on the step's stream.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUDNNCALLS_H
#define KILN_LIB_RUNTIME_CUDNNCALLS_H

#include "Program.h"

#include <functional>
#include <memory>
#include <string>

namespace kiln {
namespace rt {

class CudnnCalls {
public:
  using Address = std::function<uint8_t *(uint32_t value)>;

  /// Prepares every step with a ConvCall; `arena` holds the workspaces.
  /// `address` must give the device pointers every run will use (they are
  /// bound into the variant packs and decide the tensors' alignment). A
  /// convolution with a bias or ReLU is one fused graph; when cuDNN offers
  /// no engine for it (or `convEpilogueKernels` asks), and the step has its
  /// epilogue kernel, the graph is the plain convolution and the caller
  /// launches the kernel after it (runsEpilogueKernel).
  static Result<std::unique_ptr<CudnnCalls>> create(const Program &program,
                                                    const Address &address, uint8_t *arena,
                                                    bool convEpilogueKernels = false);
  ~CudnnCalls();

  bool has(size_t step) const;
  /// Whether step `step`'s epilogue is its kernel, to launch after run().
  bool runsEpilogueKernel(size_t step) const;
  /// The engine chosen for `step` and the heuristics mode that offered it:
  /// "engine 12 (heuristics: instant)"; "" for a step without cuDNN.
  std::string describe(size_t step) const;
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
