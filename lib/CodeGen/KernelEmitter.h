//===- KernelEmitter.h - what every kernel emitter shares -------*- C++ -*-===//

#ifndef KILN_LIB_CODEGEN_KERNELEMITTER_H
#define KILN_LIB_CODEGEN_KERNELEMITTER_H

#include "ElementEmitter.h"

#include "kiln/CodeGen/KernelGenerator.h"

namespace mlir {
namespace kiln {

/// The base of the emitters: the step being compiled, the kernel being
/// filled in (its `reason` is set by the first failure), and the element
/// expressions.
class KernelEmitter {
protected:
  KernelEmitter(exec::StepOp step, GeneratedKernel &kernel)
      : step(step), kernel(kernel), elements(step, kernel.reason) {}

  void fail(const std::string &why) {
    if (kernel.reason.empty())
      kernel.reason = why;
  }

  exec::StepOp step;
  GeneratedKernel &kernel;
  ElementEmitter elements;
};

/// A kernel that failed keeps only its reason: no half-written text.
inline void discardIfFailed(GeneratedKernel &kernel) {
  if (kernel.reason.empty())
    return;
  kernel.name.clear();
  kernel.source.clear();
  kernel.inputArgs.clear();
  kernel.paramTypes.clear();
  kernel.paramBytes.clear();
  kernel.paramDTypes.clear();
}

} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_CODEGEN_KERNELEMITTER_H
