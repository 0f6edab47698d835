//===- ExpandGradients.cpp - kiln.gradient ops as graph ops ---------------===//
//
// kiln-expand-gradients replaces each kiln.gradient op (ONNX's Gradient) by
// the vector-Jacobian products of the ops computing its value, seeded with
// ones, from kiln-grad's rules: the same reverse sweep, from the op's
// operands instead of trainable weights. Ops in program order, so a
// gradient of a gradient differentiates the first one's expansion.
//
//===----------------------------------------------------------------------===//

#include "ReverseSweep.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Transforms/Passes.h"

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNEXPANDGRADIENTS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct KilnExpandGradientsPass
    : public ::mlir::kiln::impl::KilnExpandGradientsBase<KilnExpandGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    SmallVector<GradientOp> gradients(body.getOps<GradientOp>());
    for (GradientOp gradient : gradients) {
      if (hasSymbolicSizes(gradient.getOf().getType()) ||
          llvm::any_of(gradient.getWrt(),
                       [](Value v) { return hasSymbolicSizes(v.getType()); })) {
        gradient.emitError("kiln-expand-gradients: gradients over dynamic dimensions are not "
                           "built yet");
        return signalPassFailure();
      }
      SmallVector<Value> sources(gradient.getWrt());
      SweepRequest request{gradient.getOf(), sources, gradient,
                           "the gradient's value depends on through the values it is taken "
                           "with respect to",
                           ""};
      FailureOr<SmallVector<Value>> adjoints = reverseSweep(body, request, gradient);
      if (failed(adjoints))
        return signalPassFailure();
      for (auto [result, adjoint] : llvm::zip(gradient.getGrads(), *adjoints))
        result.replaceAllUsesWith(adjoint);
      gradient.erase();
    }
  }
};

} // namespace
