//===- ElementwiseOps.cpp - ONNX elementwise ops --------------------------===//
//
// Direct maps onto kiln's elementwise ops, and decompositions of activations
// (LeakyRelu, Elu, HardSigmoid, ...) into them.
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

template <typename OpT>
Converter unary() {
  return [](NodeContext &c) -> LogicalResult {
    Value r = c.build<OpT>(c.input(0));
    if (!r)
      return failure();
    c.results.push_back(r);
    return success();
  };
}

/// Before opset 7, binary ops broadcast only with broadcast=1, aligning B
/// with A at `axis`; align B explicitly so kiln's NumPy rule applies (null,
/// with an error, when B does not fit at `axis`).
Value legacyBroadcast(NodeContext &c, Value a, Value b) {
  if (!a || !b)
    return Value();
  if (c.opset >= 7 || c.attrInt("broadcast", 0) == 0 || !c.attr("axis"))
    return b;
  int64_t ra = c.rank(a), rb = c.rank(b);
  int64_t axis = c.attrInt("axis", 0), given = axis;
  if (axis < 0)
    axis += ra;
  if (axis < 0 || axis > ra - rb) {
    emitError(c.loc) << "broadcast axis " << given << " does not place a rank-" << rb
                     << " operand inside rank " << ra;
    return Value();
  }
  SmallVector<int64_t> shape(axis, 1);
  llvm::append_range(shape, c.type(b).getShape());
  while (static_cast<int64_t>(shape.size()) < ra)
    shape.push_back(1);
  return c.reshape(b, shape);
}

template <typename OpT>
Converter binary() {
  return [](NodeContext &c) -> LogicalResult {
    Value b = legacyBroadcast(c, c.input(0), c.input(1));
    if (!b)
      return failure();
    Value r = c.build<OpT>({c.input(0), b});
    if (!r)
      return failure();
    c.results.push_back(r);
    return success();
  };
}

/// Folds a variadic op (Min, Max, Sum) left to right.
template <typename OpT>
Converter variadic(bool mean = false) {
  return [mean](NodeContext &c) -> LogicalResult {
    if (c.numInputs() == 0)
      return c.unsupportedBecause("no inputs");
    Value acc = c.input(0);
    for (size_t k = 1; k < c.numInputs() && acc; ++k)
      acc = c.build<OpT>({acc, c.input(k)});
    if (acc && mean)
      acc = c.build<DivOp>({acc, c.scalarLike(acc, c.numInputs())});
    if (!acc)
      return failure();
    c.results.push_back(acc);
    return success();
  };
}

/// cond ? a : b with scalars built on demand.
Value where(NodeContext &c, Value cond, Value a, Value b) {
  if (!cond || !a || !b)
    return Value();
  return c.build<SelectOp>({cond, a, b});
}

bool isFloat(NodeContext &c, Value v) {
  return llvm::isa<FloatType>(c.type(v).getElementType());
}

} // namespace

void registerElementwiseConverters(ConverterMap &m) {
  m["Neg"] = unary<NegOp>();
  m["Abs"] = unary<AbsOp>();
  m["Exp"] = unary<ExpOp>();
  m["Log"] = unary<LogOp>();
  m["Sqrt"] = unary<SqrtOp>();
  m["Tanh"] = unary<TanhOp>();
  m["Sigmoid"] = unary<SigmoidOp>();
  m["Relu"] = unary<ReluOp>();
  m["Erf"] = unary<ErfOp>();
  m["Not"] = unary<NotOp>();
  m["Floor"] = unary<FloorOp>();
  m["Ceil"] = unary<CeilOp>();
  m["Round"] = unary<RoundOp>();
  m["Sin"] = unary<SinOp>();
  m["Cos"] = unary<CosOp>();
  m["Tan"] = unary<TanOp>();
  m["Asin"] = unary<AsinOp>();
  m["Acos"] = unary<AcosOp>();
  m["Atan"] = unary<AtanOp>();
  m["Sinh"] = unary<SinhOp>();
  m["Cosh"] = unary<CoshOp>();
  m["Asinh"] = unary<AsinhOp>();
  m["Acosh"] = unary<AcoshOp>();
  m["Atanh"] = unary<AtanhOp>();
  m["Sign"] = unary<SignOp>();

  m["Add"] = binary<AddOp>();
  m["Sub"] = binary<SubOp>();
  m["Mul"] = binary<MulOp>();
  m["Div"] = binary<DivOp>();
  m["Equal"] = binary<EqOp>();
  m["Less"] = binary<LtOp>();
  m["LessOrEqual"] = binary<LeOp>();
  m["Greater"] = binary<GtOp>();
  m["GreaterOrEqual"] = binary<GeOp>();
  m["And"] = binary<AndOp>();
  m["Or"] = binary<OrOp>();
  m["Xor"] = binary<NeOp>(); // on booleans, xor is inequality
  m["Min"] = variadic<MinOp>();
  m["Max"] = variadic<MaxOp>();
  m["Sum"] = variadic<AddOp>();
  m["Mean"] = variadic<AddOp>(/*mean=*/true);

  m["Pow"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), y = c.input(1);
    Type element = c.type(x).getElementType();
    // Integer powers are computed in f64 (exact for results below 2^53).
    Type computed = isFloat(c, x) ? element : c.builder.getF64Type();
    auto to = [&](Value v, Type t) {
      return c.type(v).getElementType() == t ? v : c.build<CastOp>(v, {c.named("to", TypeAttr::get(t))});
    };
    Value r = c.build<PowOp>({to(x, computed), to(y, computed)});
    return c.finish(r ? to(r, element) : r);
  };
  m["Mod"] = [](NodeContext &c) -> LogicalResult {
    bool fmod = c.attrInt("fmod", 0) != 0;
    if (!fmod && isFloat(c, c.input(0)))
      return c.unsupportedBecause("integer mod on floats"); // ONNX requires fmod=1 there
    return c.finish(c.build<ModOp>({c.input(0), c.input(1)}, {c.named("fmod", c.builder.getBoolAttr(fmod))}));
  };
  // x << y and x >> y as a product or quotient with 2^y (unsigned types).
  m["BitShift"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), y = c.input(1);
    std::string direction = c.attrString("direction", "");
    if (direction != "LEFT" && direction != "RIGHT")
      return c.unsupportedBecause("direction '" + direction + "'");
    Type element = c.type(x).getElementType(), f64 = c.builder.getF64Type();
    Value power = c.build<PowOp>({c.scalarLike(c.build<CastOp>(y, {c.named("to", TypeAttr::get(f64))}), 2.0),
                                  c.build<CastOp>(y, {c.named("to", TypeAttr::get(f64))})});
    Value factor = c.build<CastOp>(power, {c.named("to", TypeAttr::get(element))});
    return c.finish(direction == "LEFT" ? c.build<MulOp>({x, factor}) : c.build<DivOp>({x, factor}));
  };
  m["Reciprocal"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(c.build<DivOp>({c.scalarLike(c.input(0), 1.0), c.input(0)}));
  };
  m["Where"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(where(c, c.input(0), c.input(1), c.input(2)));
  };
  m["Identity"] = [](NodeContext &c) -> LogicalResult { return c.finish(c.input(0)); };
  m["Dropout"] = [](NodeContext &c) -> LogicalResult {
    // Inference: the identity. A requested mask is all true.
    if (c.numInputs() > 2 && c.input(2)) {
      FailureOr<double> training = c.constantScalar(2);
      if (failed(training) || *training != 0)
        return c.unsupportedBecause("training mode");
    }
    c.results.push_back(c.input(0));
    if (c.node.output_size() > 1 && !c.node.output(1).empty()) {
      auto type = RankedTensorType::get(c.type(c.input(0)).getShape(), c.builder.getI1Type());
      c.results.push_back(c.constant(DenseElementsAttr::get(type, true)));
    }
    return success();
  };
  m["Cast"] = [](NodeContext &c) -> LogicalResult {
    int64_t code = c.attrInt("to", 0);
    Type to = code == static_cast<int32_t>(code) ? elementTypeOf(c.builder.getContext(), code) : Type();
    if (!to)
      return c.unsupportedBecause("cast to " + (code == static_cast<int32_t>(code)
                                                    ? dataTypeName(code)
                                                    : "type " + std::to_string(code)));
    return c.finish(c.build<CastOp>(c.input(0), {c.named("to", TypeAttr::get(to))}));
  };
  m["CastLike"] = [](NodeContext &c) -> LogicalResult {
    Type to = c.type(c.input(1)).getElementType();
    return c.finish(c.build<CastOp>(c.input(0), {c.named("to", TypeAttr::get(to))}));
  };
  m["IsNaN"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(c.build<NeOp>({c.input(0), c.input(0)}));
  };
  m["Clip"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), lo, hi;
    if (c.opset < 11) {
      lo = c.scalarLike(x, c.attrFloat("min", -std::numeric_limits<float>::infinity()));
      hi = c.scalarLike(x, c.attrFloat("max", std::numeric_limits<float>::infinity()));
    } else {
      lo = c.input(1);
      hi = c.input(2);
    }
    Value r = x;
    if (lo)
      r = c.build<MaxOp>({r, lo});
    if (r && hi)
      r = c.build<MinOp>({r, hi});
    return c.finish(r);
  };
  m["LeakyRelu"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), zero = c.scalarLike(x, 0);
    Value scaled = c.build<MulOp>({x, c.scalarLike(x, c.attrFloat("alpha", 0.01f))});
    return c.finish(where(c, c.build<LtOp>({x, zero}), scaled, x));
  };
  m["PRelu"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), zero = c.scalarLike(x, 0);
    Value slope = legacyBroadcast(c, x, c.input(1));
    // Before opset 7 a 1-D slope of C values is per channel (dimension 1).
    if (slope && c.opset < 7 && c.rank(slope) == 1 && c.rank(x) > 2 &&
        c.type(slope).getDimSize(0) == c.type(x).getDimSize(1) && c.type(x).getDimSize(1) != 1) {
      SmallVector<int64_t> shape(c.rank(x) - 1, 1);
      shape[0] = c.type(x).getDimSize(1);
      slope = c.reshape(slope, shape);
    }
    Value scaled = c.build<MulOp>({x, slope});
    return c.finish(where(c, c.build<LtOp>({x, zero}), scaled, x));
  };
  auto elu = [](NodeContext &c, Value x, double alpha) {
    Value expm1 = c.build<SubOp>({c.build<ExpOp>(x), c.scalarLike(x, 1)});
    Value negative = c.build<MulOp>({expm1, c.scalarLike(x, alpha)});
    return where(c, c.build<GtOp>({x, c.scalarLike(x, 0)}), x, negative);
  };
  m["Elu"] = [elu](NodeContext &c) -> LogicalResult {
    return c.finish(elu(c, c.input(0), c.attrFloat("alpha", 1.0f)));
  };
  m["Selu"] = [elu](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    Value e = elu(c, x, c.attrFloat("alpha", 1.67326319217681884765625f));
    return c.finish(e ? c.build<MulOp>({e, c.scalarLike(x, c.attrFloat("gamma", 1.05070102214813232421875f))})
                       : Value());
  };
  m["Celu"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    double alpha = c.attrFloat("alpha", 1.0f);
    Value expm1 = c.build<SubOp>({c.build<ExpOp>(c.build<DivOp>({x, c.scalarLike(x, alpha)})),
                                  c.scalarLike(x, 1)});
    Value negative = c.build<MinOp>({c.build<MulOp>({expm1, c.scalarLike(x, alpha)}), c.scalarLike(x, 0)});
    return c.finish(c.build<AddOp>({c.build<ReluOp>(x), negative}));
  };
  m["ThresholdedRelu"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    Value above = c.build<GtOp>({x, c.scalarLike(x, c.attrFloat("alpha", 1.0f))});
    return c.finish(where(c, above, x, c.build<MulOp>({x, c.scalarLike(x, 0)})));
  };
  m["HardSigmoid"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    Value y = c.build<AddOp>({c.build<MulOp>({x, c.scalarLike(x, c.attrFloat("alpha", 0.2f))}),
                              c.scalarLike(x, c.attrFloat("beta", 0.5f))});
    return c.finish(c.build<MaxOp>({c.build<MinOp>({y, c.scalarLike(x, 1)}), c.scalarLike(x, 0)}));
  };
  m["HardSwish"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    Value y = c.build<AddOp>({c.build<MulOp>({x, c.scalarLike(x, 1.0 / 6.0)}), c.scalarLike(x, 0.5)});
    Value gate = c.build<MaxOp>({c.build<MinOp>({y, c.scalarLike(x, 1)}), c.scalarLike(x, 0)});
    return c.finish(c.build<MulOp>({x, gate}));
  };
  m["Softplus"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    return c.finish(c.build<LogOp>(c.build<AddOp>({c.build<ExpOp>(x), c.scalarLike(x, 1)})));
  };
  m["Softsign"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    return c.finish(c.build<DivOp>({x, c.build<AddOp>({c.build<AbsOp>(x), c.scalarLike(x, 1)})}));
  };
  m["Mish"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    Value softplus = c.build<LogOp>(c.build<AddOp>({c.build<ExpOp>(x), c.scalarLike(x, 1)}));
    return c.finish(c.build<MulOp>({x, c.build<TanhOp>(softplus)}));
  };
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
