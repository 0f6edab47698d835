//===- ReductionOps.cpp - ONNX reductions and arg-reductions --------------===//

#include "OnnxContext.h"

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

/// Reduces `x` with OpT over the node's axes (attribute, or input #1 from
/// `inputOpset` on), honouring keepdims and noop_with_empty_axes.
template <typename OpT>
Value reduce(NodeContext &c, Value x, int64_t inputOpset) {
  if (!x)
    return Value();
  int64_t rank = c.rank(x);
  SmallVector<int64_t> axes;
  if (c.opset >= inputOpset && c.input(1))
    if (std::optional<SmallVector<AffineExpr>> values = c.runTimeInts(1);
        values && !values->empty())
      return reduceAtRunTime(
          c, x, *values, c.attrInt("keepdims", 1) != 0,
          [&](ArrayRef<NamedAttribute> attrs) { return c.build<OpT>(x, attrs); });
  if (c.opset >= inputOpset) {
    if (c.input(1) && !c.runTimeInts(1)) {
      FailureOr<SmallVector<int64_t>> a = c.constantInts(1);
      if (failed(a))
        return Value();
      axes = *a;
    }
  } else if (auto a = c.attrInts("axes")) {
    axes.assign(a->begin(), a->end());
  }
  if (axes.empty()) {
    if (c.attrInt("noop_with_empty_axes", 0))
      return x;
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  for (int64_t &a : axes) {
    FailureOr<int64_t> n = c.axis(a, rank);
    if (failed(n))
      return Value();
    a = *n;
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return c.build<OpT>(x, {c.named("axes", c.builder.getDenseI64ArrayAttr(axes)),
                          c.named("keepdims", c.builder.getBoolAttr(c.attrInt("keepdims", 1) != 0))});
}

template <typename OpT>
Converter plain(int64_t inputOpset = 18) {
  return [inputOpset](NodeContext &c) -> LogicalResult {
    return c.finish(reduce<OpT>(c, c.input(0), inputOpset));
  };
}

/// ArgMax of `x`, or with select_last_index the last maximum: the argmax of
/// the reversed axis, mirrored.
LogicalResult argReduce(NodeContext &c, Value x) {
  if (!x)
    return failure();
  int64_t rank = c.rank(x);
  FailureOr<int64_t> axis = c.axis(c.attrInt("axis", 0), rank);
  if (failed(axis) || !x)
    return failure();
  bool last = c.attrInt("select_last_index", 0) != 0;
  int64_t dim = c.type(x).getDimSize(*axis);
  if (last) {
    SmallVector<int64_t> starts(rank, 0), ends(c.type(x).getShape()), steps(rank, 1);
    starts[*axis] = dim - 1;
    ends[*axis] = -1;
    steps[*axis] = -1;
    x = c.build<SliceOp>(x, {c.named("starts", c.builder.getDenseI64ArrayAttr(starts)),
                             c.named("ends", c.builder.getDenseI64ArrayAttr(ends)),
                             c.named("steps", c.builder.getDenseI64ArrayAttr(steps))});
  }
  Value index = c.build<ArgMaxOp>(x, {c.named("axis", c.builder.getI64IntegerAttr(*axis)),
                                      c.named("keepdims", c.builder.getBoolAttr(c.attrInt("keepdims", 1) != 0))});
  if (index && last)
    index = c.build<SubOp>({c.constantI64(dim - 1, /*asVector=*/false), index});
  return c.finish(index);
}

} // namespace

void registerReductionConverters(ConverterMap &m) {
  m["ReduceSum"] = plain<ReduceSumOp>(/*inputOpset=*/13);
  m["ReduceMean"] = plain<ReduceMeanOp>();
  m["ReduceMax"] = plain<ReduceMaxOp>();
  m["ReduceMin"] = plain<ReduceMinOp>();
  m["ReduceProd"] = plain<ReduceProdOp>();
  m["ReduceL1"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(reduce<ReduceSumOp>(c, c.build<AbsOp>(c.input(0)), 18));
  };
  m["ReduceL2"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    Value sum = reduce<ReduceSumOp>(c, c.build<MulOp>({x, x}), 18);
    return c.finish(c.build<SqrtOp>(sum));
  };
  m["ReduceSumSquare"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    return c.finish(reduce<ReduceSumOp>(c, c.build<MulOp>({x, x}), 18));
  };
  m["ReduceLogSum"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(c.build<LogOp>(reduce<ReduceSumOp>(c, c.input(0), 18)));
  };
  m["ReduceLogSumExp"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(c.build<LogOp>(reduce<ReduceSumOp>(c, c.build<ExpOp>(c.input(0)), 18)));
  };
  m["ArgMax"] = [](NodeContext &c) { return argReduce(c, c.input(0)); };
  m["ArgMin"] = [](NodeContext &c) { return argReduce(c, c.build<NegOp>(c.input(0))); };
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
