//===- CublasLtCalls.h - a plan's cuBLASLt steps on a GPU -------*- C++ -*-===//
//
// cuBLASLt is opened with dlopen when an executable has library steps, so
// no binary depends on it. Each step's descriptor becomes a matmul
// descriptor, its matrix layouts and one algorithm, all chosen once at load
// (so every run uses the same algorithm: part of --deterministic) for the
// alignment the operands' device pointers really have; a run is then one
// cublasLtMatmul on the step's stream with its workspace in the arena.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_CUBLASLTCALLS_H
#define KILN_LIB_RUNTIME_CUBLASLTCALLS_H

#include "Program.h"

#include <functional>
#include <memory>

namespace kiln {
namespace rt {

class CublasLtCalls {
public:
  /// Device address of a program value (input, weight or arena buffer).
  using Address = std::function<uint8_t *(uint32_t value)>;

  /// Prepares every step with a GemmCall; `arena` holds the workspaces.
  /// `address` must give the device pointers every run will use (they are
  /// bound into the calls and decide the algorithms' alignment).
  static Result<std::unique_ptr<CublasLtCalls>> create(const Program &program,
                                                       const Address &address, uint8_t *arena);
  ~CublasLtCalls();

  bool has(size_t step) const;
  /// The algorithm chosen for step `step` and what it was chosen for.
  std::string describe(size_t step) const;
  /// Queues step `index`'s call on `stream` (a cudaStream_t).
  Status run(size_t index, void *stream) const;

  struct Api;
  struct Call;

private:
  CublasLtCalls() = default;
  std::unique_ptr<Api> api_;
  void *handle_ = nullptr; ///< cublasLtHandle_t
  std::vector<std::unique_ptr<Call>> calls_; ///< per step; null when none
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_CUBLASLTCALLS_H
