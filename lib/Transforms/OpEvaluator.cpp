//===- OpEvaluator.cpp - evaluate kiln ops with the reference kernels -----===//

#include "kiln/Transforms/OpEvaluator.h"

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/ReferenceConversion.h"
#include "kiln/Reference/Kernels.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kiln;
namespace ref = ::kiln::ref;

namespace {

std::vector<int64_t> vec(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

ref::Pool2dParams poolParams(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                             ArrayRef<int64_t> padding, bool ceilMode,
                             bool countIncludePad) {
  ref::Pool2dParams p;
  std::copy(kernel.begin(), kernel.end(), p.kernel);
  std::copy(strides.begin(), strides.end(), p.strides);
  std::copy(padding.begin(), padding.end(), p.padding);
  p.ceilMode = ceilMode;
  p.countIncludePad = countIncludePad;
  return p;
}

/// Evaluates `op` on reference tensors; std::nullopt if not covered.
std::optional<ref::Tensor> evaluate(Operation *op,
                                    ArrayRef<ref::Tensor> in) {
  using U = ref::UnaryKind;
  using B = ref::BinaryKind;
  using R = ref::ReduceKind;
  auto unary = [&](U kind) { return ref::unary(kind, in[0]); };
  auto binary = [&](B kind) { return ref::binary(kind, in[0], in[1]); };
  return llvm::TypeSwitch<Operation *, std::optional<ref::Tensor>>(op)
      .Case([&](NegOp) { return unary(U::Neg); })
      .Case([&](AbsOp) { return unary(U::Abs); })
      .Case([&](ExpOp) { return unary(U::Exp); })
      .Case([&](LogOp) { return unary(U::Log); })
      .Case([&](SqrtOp) { return unary(U::Sqrt); })
      .Case([&](RsqrtOp) { return unary(U::Rsqrt); })
      .Case([&](TanhOp) { return unary(U::Tanh); })
      .Case([&](SigmoidOp) { return unary(U::Sigmoid); })
      .Case([&](ReluOp) { return unary(U::Relu); })
      .Case([&](GeluOp) { return unary(U::Gelu); })
      .Case([&](ErfOp) { return unary(U::Erf); })
      .Case([&](NotOp) { return unary(U::Not); })
      .Case([&](AddOp) { return binary(B::Add); })
      .Case([&](SubOp) { return binary(B::Sub); })
      .Case([&](MulOp) { return binary(B::Mul); })
      .Case([&](DivOp) { return binary(B::Div); })
      .Case([&](PowOp) { return binary(B::Pow); })
      .Case([&](MaxOp) { return binary(B::Max); })
      .Case([&](MinOp) { return binary(B::Min); })
      .Case([&](AndOp) { return binary(B::And); })
      .Case([&](OrOp) { return binary(B::Or); })
      .Case([&](EqOp) { return binary(B::Eq); })
      .Case([&](NeOp) { return binary(B::Ne); })
      .Case([&](LtOp) { return binary(B::Lt); })
      .Case([&](LeOp) { return binary(B::Le); })
      .Case([&](GtOp) { return binary(B::Gt); })
      .Case([&](GeOp) { return binary(B::Ge); })
      .Case([&](SelectOp) { return ref::select(in[0], in[1], in[2]); })
      .Case([&](CastOp o) {
        return ref::cast(in[0], *toReferenceDType(o.getTo()));
      })
      .Case([&](ReshapeOp o) {
        return ref::reshape(in[0], ref::Shape(o.getType().getShape()));
      })
      .Case([&](TransposeOp o) { return ref::transpose(in[0], vec(o.getPerm())); })
      .Case([&](BroadcastOp o) {
        return ref::broadcastTo(in[0], vec(o.getShape()));
      })
      .Case([&](SliceOp o) {
        return ref::slice(in[0], vec(o.getStarts()), vec(o.getEnds()),
                          vec(o.getSteps()));
      })
      .Case([&](ConcatOp o) {
        std::vector<const ref::Tensor *> inputs;
        for (const ref::Tensor &t : in)
          inputs.push_back(&t);
        return ref::concat(inputs, o.getAxis());
      })
      .Case([&](PadOp o) {
        return ref::pad(in[0], vec(o.getLow()), vec(o.getHigh()),
                        o.getValue().convertToDouble());
      })
      .Case([&](GatherOp o) { return ref::gather(in[0], in[1], o.getAxis()); })
      // Transfers and relayouts keep the logical value.
      .Case([&](TransferOp) { return in[0]; })
      .Case([&](RelayoutOp) { return in[0]; })
      .Case([&](ReduceSumOp o) {
        return ref::reduce(R::Sum, in[0], vec(o.getAxes()), o.getKeepdims());
      })
      .Case([&](ReduceMeanOp o) {
        return ref::reduce(R::Mean, in[0], vec(o.getAxes()), o.getKeepdims());
      })
      .Case([&](ReduceMaxOp o) {
        return ref::reduce(R::Max, in[0], vec(o.getAxes()), o.getKeepdims());
      })
      .Case([&](ReduceMinOp o) {
        return ref::reduce(R::Min, in[0], vec(o.getAxes()), o.getKeepdims());
      })
      .Case([&](ReduceProdOp o) {
        return ref::reduce(R::Prod, in[0], vec(o.getAxes()), o.getKeepdims());
      })
      .Case([&](ArgMaxOp o) {
        return ref::argmax(in[0], o.getAxis(), o.getKeepdims());
      })
      .Case([&](SoftmaxOp o) { return ref::softmax(in[0], o.getAxis(), false); })
      .Case([&](LogSoftmaxOp o) {
        return ref::softmax(in[0], o.getAxis(), true);
      })
      .Case([&](BatchNormOp o) {
        return ref::batchNorm(in[0], in[1], in[2], in[3], in[4],
                              o.getEpsilon().convertToDouble());
      })
      .Case([&](LayerNormOp o) {
        return ref::layerNorm(in[0], in[1], o.getBias() ? &in[2] : nullptr,
                              o.getAxis(), o.getEpsilon().convertToDouble());
      })
      .Case([&](MatMulOp o) {
        return ref::matmul(in[0], in[1], o.getTransposeA(), o.getTransposeB());
      })
      .Case([&](Conv2dOp o) {
        ref::Conv2dParams p;
        std::copy(o.getStrides().begin(), o.getStrides().end(), p.strides);
        std::copy(o.getPadding().begin(), o.getPadding().end(), p.padding);
        std::copy(o.getDilations().begin(), o.getDilations().end(), p.dilations);
        p.groups = o.getGroups();
        return ref::conv2d(in[0], in[1], o.getBias() ? &in[2] : nullptr, p);
      })
      .Case([&](MaxPool2dOp o) {
        return ref::maxPool2d(in[0], poolParams(o.getKernel(), o.getStrides(),
                                                o.getPadding(), o.getCeilMode(),
                                                o.getCountIncludePad()));
      })
      .Case([&](AvgPool2dOp o) {
        return ref::avgPool2d(in[0], poolParams(o.getKernel(), o.getStrides(),
                                                o.getPadding(), o.getCeilMode(),
                                                o.getCountIncludePad()));
      })
      .Case([&](GlobalAvgPoolOp) { return ref::globalAvgPool(in[0]); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace

FailureOr<DenseElementsAttr>
mlir::kiln::evaluateOp(Operation *op, ArrayRef<ElementsAttr> operands) {
  if (op->getNumResults() != 1)
    return failure();
  auto resultType = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType || !toReferenceDType(resultType.getElementType()))
    return failure();
  SmallVector<ref::Tensor> inputs;
  for (ElementsAttr operand : operands) {
    FailureOr<ref::Tensor> t = toReferenceTensor(operand);
    if (failed(t))
      return failure();
    inputs.push_back(std::move(*t));
  }
  std::optional<ref::Tensor> result = evaluate(op, inputs);
  if (!result || result->shape != ref::Shape(resultType.getShape()))
    return failure();
  return toElementsAttr(*result, resultType);
}

int64_t mlir::kiln::estimateEvaluationCost(Operation *op) {
  auto resultType = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  int64_t outputs = resultType.getNumElements();
  if (auto matmul = llvm::dyn_cast<MatMulOp>(op)) {
    RankedTensorType a = matmul.getLhs().getType();
    return outputs * a.getDimSize(a.getRank() - (matmul.getTransposeA() ? 2 : 1));
  }
  if (auto conv = llvm::dyn_cast<Conv2dOp>(op)) {
    RankedTensorType w = conv.getFilter().getType();
    return outputs * w.getDimSize(1) * w.getDimSize(2) * w.getDimSize(3);
  }
  int64_t inputs = 0;
  for (Value operand : op->getOperands())
    inputs += llvm::cast<ShapedType>(operand.getType()).getNumElements();
  return std::max(outputs, inputs);
}
