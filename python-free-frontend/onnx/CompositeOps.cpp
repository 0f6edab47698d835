//===- CompositeOps.cpp - ONNX ops decomposed into kiln ops ---------------===//
//
// Ops with no kiln op of their own, written in terms of kiln ops: losses
// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), masks from static
// shapes (Trilu, EyeLike, Hardmax, OneHot), layout shuffles
// (DepthToSpace, SpaceToDepth), normalisations and CumSum.
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

#include "kiln/IR/ReferenceConversion.h"
#include "kiln/Reference/SizeCode.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

/// The positions of the nonzeros of `flat` (an i64 vector), in order, to
/// `count` of them: a stable sort of flat == 0 puts them first.
Value nonZeroPositions(NodeContext &c, Value flat, AffineExpr count) {
  Type i64 = c.builder.getI64Type();
  Value order = c.build<ArgSortOp>(c.cast(c.build<EqOp>({flat, c.constantI64(0, false)}), i64),
                                   {c.named("axis", c.builder.getI64IntegerAttr(0)),
                                    c.named("descending", c.builder.getBoolAttr(false))});
  return c.build<SliceOp>(
      order, {c.named("starts", c.ints({0})), c.named("ends", c.ints({0})),
              c.named("steps", c.ints({1})),
              c.named("end_sizes",
                      AffineMapAttr::get(getSizesMap({count}, c.builder.getContext())))});
}

Value transpose(NodeContext &c, Value v, ArrayRef<int64_t> perm) {
  return c.build<TransposeOp>(v, {c.named("perm", c.ints(perm))});
}

/// A constant of `shape` and `element` type with value f(index); null
/// (with an error) past kMaxComputedElements.
Value generated(NodeContext &c, ArrayRef<int64_t> shape, Type element,
                const std::function<double(ArrayRef<int64_t>)> &f) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && elements > kMaxComputedElements / d)) {
      emitError(c.loc) << "would build a constant of shape [" << llvm::make_range(shape.begin(), shape.end())
                       << "]; the importer builds constants of at most 2^26 elements";
      return Value();
    }
    elements *= d;
  }
  ::kiln::ref::Tensor t = ::kiln::ref::Tensor::zeros(*toReferenceDType(element), shape);
  int64_t k = 0;
  for (::kiln::ref::IndexIterator it(::kiln::ref::Shape(shape.begin(), shape.end())); !it.done();
       it.next(), ++k)
    t.setDouble(k, f(it.index()));
  return c.constant(toElementsAttr(t, RankedTensorType::get(shape, element)));
}

/// The shape of `v` with 1 everywhere except `axis`.
SmallVector<int64_t> alongAxis(int64_t rank, int64_t axis, int64_t extent) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = extent;
  return shape;
}

/// GatherND and ScatterND index tuples: indices of rank 1 or more whose
/// last dimension (the tuple length) is 1 to the data's rank.
LogicalResult checkIndexTuples(NodeContext &c, ArrayRef<int64_t> data, ArrayRef<int64_t> indices) {
  if (indices.empty())
    return emitError(c.loc) << "takes indices of rank 1 or more (index tuples along the last axis)";
  if (indices.back() < 1 || indices.back() > static_cast<int64_t>(data.size()))
    return emitError(c.loc) << "has index tuples of length " << indices.back()
                            << " for data of rank " << data.size();
  return success();
}

/// NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] and targets
/// [N, d...].
Value nllLoss(NodeContext &c, Value logProb, Value target, Value weight) {
  if (!logProb || !target)
    return Value();
  std::string reduction = c.attrString("reduction", "mean");
  Type element = c.type(logProb).getElementType();
  SmallVector<int64_t> targetShape(c.type(target).getShape());
  if (targetShape.empty() || c.rank(logProb) != c.rank(target) + 1) {
    emitError(c.loc) << "takes targets [N, d...] of rank one less than the input's; got rank "
                     << c.rank(target) << " for an input of rank " << c.rank(logProb);
    return Value();
  }
  Value valid;
  if (const onnx::AttributeProto *ignore = c.attr("ignore_index")) {
    Value ignored = c.constantI64(ignore->i(), /*asVector=*/false);
    ignored = c.cast(ignored, c.type(target).getElementType());
    valid = c.build<NeOp>({target, ignored});
    // Ignored positions may hold any index: point them at class 0.
    target = c.build<SelectOp>({valid, target, c.build<MulOp>({target, c.scalarLike(target, 0)})});
  }
  SmallVector<int64_t> picked(targetShape);
  picked.insert(picked.begin() + 1, 1);
  Value index = c.reshape(target, picked);
  Value loss = c.build<NegOp>(c.build<GatherElementsOp>({logProb, index},
                                                        {c.named("axis", c.builder.getI64IntegerAttr(1))}));
  loss = loss ? c.reshape(loss, targetShape) : loss;
  Value w;
  if (weight)
    w = c.build<GatherOp>({weight, target}, {c.named("axis", c.builder.getI64IntegerAttr(0))});
  if (valid) {
    Value mask = c.cast(valid, element);
    w = w ? c.build<MulOp>({w, mask}) : mask;
  }
  if (w)
    loss = c.build<MulOp>({loss, w});
  if (!loss || reduction == "none")
    return loss;
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < c.rank(loss); ++d)
    all.push_back(d);
  auto sum = [&](Value v) { return c.build<ReduceSumOp>(v, {c.named("axes", c.ints(all))}); };
  if (reduction == "sum")
    return sum(loss);
  if (reduction != "mean") {
    emitError(c.loc) << "unknown reduction '" << reduction << "'";
    return Value();
  }
  if (!w)
    return c.build<ReduceMeanOp>(loss, {c.named("axes", c.ints(all))});
  return c.build<DivOp>({sum(loss), sum(w)});
}

/// Normalises over `axes`, returning (y, mean, inverse standard deviation).
std::tuple<Value, Value, Value> normalize(NodeContext &c, Value x, ArrayRef<int64_t> axes,
                                          double epsilon) {
  auto mean = [&](Value v) {
    return c.build<ReduceMeanOp>(v, {c.named("axes", c.ints(axes)),
                                     c.named("keepdims", c.builder.getBoolAttr(true))});
  };
  Value mu = mean(x);
  Value centred = c.build<SubOp>({x, mu});
  Value variance = mean(c.build<MulOp>({centred, centred}));
  Value inv = c.build<RsqrtOp>(c.build<AddOp>({variance, c.scalarLike(x, epsilon)}));
  return {c.build<MulOp>({centred, inv}), mu, inv};
}

/// Einsum of one or two operands without repeated letters in an operand
/// (no diagonals): letters only in one operand and not in the output are
/// summed first; then batch letters (in both operands and the output),
/// contracted letters (in both, not in the output) and free letters make a
/// batched matmul, transposed into the output's order.
LogicalResult einsum(NodeContext &c) {
  std::string equation = c.attrString("equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  if (equation.find("...") != std::string::npos)
    return c.unsupportedBecause("ellipsis");
  size_t arrow = equation.find("->");
  std::string output;
  if (arrow == std::string::npos) { // implicit: letters used once, alphabetically
    std::map<char, int> uses;
    for (char ch : equation)
      if (ch != ',')
        ++uses[ch];
    for (auto [ch, n] : uses)
      if (n == 1)
        output += ch;
    arrow = equation.size();
  } else {
    output = equation.substr(arrow + 2);
  }
  SmallVector<std::string> terms;
  SmallVector<StringRef> pieces;
  StringRef(equation).substr(0, arrow).split(pieces, ',');
  for (StringRef piece : pieces)
    terms.push_back(piece.str());
  if (terms.empty() || terms.size() > 2 || terms.size() != c.numInputs())
    return c.unsupportedBecause("more than two operands");
  SmallVector<Value> values(c.inputs.begin(), c.inputs.end());
  std::map<char, int64_t> extent;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (static_cast<int64_t>(terms[k].size()) != c.rank(values[k]))
      return c.unsupportedBecause("subscripts do not match the rank");
    std::set<char> seen;
    for (size_t d = 0; d < terms[k].size(); ++d) {
      if (!seen.insert(terms[k][d]).second)
        return c.unsupportedBecause("a repeated subscript (diagonal)");
      extent[terms[k][d]] = c.type(values[k]).getDimSize(d);
    }
  }
  auto sumOut = [&](size_t k, const std::string &keep) {
    SmallVector<int64_t> axes;
    std::string rest;
    for (size_t d = 0; d < terms[k].size(); ++d) {
      if (keep.find(terms[k][d]) == std::string::npos)
        axes.push_back(d);
      else
        rest += terms[k][d];
    }
    if (!axes.empty())
      values[k] = c.build<ReduceSumOp>(values[k], {c.named("axes", c.ints(axes))});
    terms[k] = rest;
  };
  auto permuteTo = [&](Value v, const std::string &from, const std::string &to) {
    SmallVector<int64_t> perm;
    for (char ch : to)
      perm.push_back(from.find(ch));
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d)
      identity &= perm[d] == static_cast<int64_t>(d);
    return identity ? v : c.build<TransposeOp>(v, {c.named("perm", c.ints(perm))});
  };
  auto dims = [&](const std::string &letters) {
    int64_t n = 1;
    for (char ch : letters)
      n *= extent[ch];
    return n;
  };
  if (terms.size() == 1) {
    sumOut(0, output);
    return c.finish(permuteTo(values[0], terms[0], output));
  }
  sumOut(0, output + terms[1]);
  sumOut(1, output + terms[0]);
  std::string batch, contracted, leftFree, rightFree;
  for (char ch : terms[0]) {
    bool inRight = terms[1].find(ch) != std::string::npos, inOut = output.find(ch) != std::string::npos;
    (inRight ? (inOut ? batch : contracted) : leftFree) += ch;
  }
  for (char ch : terms[1])
    if (terms[0].find(ch) == std::string::npos)
      rightFree += ch;
  Value a = c.reshape(permuteTo(values[0], terms[0], batch + leftFree + contracted),
                      {dims(batch), dims(leftFree), dims(contracted)});
  Value b = c.reshape(permuteTo(values[1], terms[1], batch + contracted + rightFree),
                      {dims(batch), dims(contracted), dims(rightFree)});
  Value product = c.build<MatMulOp>({a, b});
  std::string produced = batch + leftFree + rightFree;
  SmallVector<int64_t> shape;
  for (char ch : produced)
    shape.push_back(extent[ch]);
  if (!product)
    return failure();
  return c.finish(permuteTo(c.reshape(product, shape), produced, output));
}

} // namespace

void registerCompositeConverters(ConverterMap &m) {
  m["NegativeLogLikelihoodLoss"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(nllLoss(c, c.input(0), c.input(1), c.input(2)));
  };
  m["SoftmaxCrossEntropyLoss"] = [](NodeContext &c) -> LogicalResult {
    Value logProb = c.build<LogSoftmaxOp>(c.input(0), {c.named("axis", c.builder.getI64IntegerAttr(1))});
    if (failed(c.finish(nllLoss(c, logProb, c.input(1), c.input(2)))))
      return failure();
    c.results.push_back(logProb);
    return success();
  };
  m["Trilu"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    int64_t rank = c.rank(x);
    if (rank < 2)
      return c.unsupportedBecause("input of rank < 2");
    ArrayRef<int64_t> s = c.type(x).getShape();
    bool upper = c.attrInt("upper", 1) != 0;
    Value k1 = c.input(1);
    std::string saved = c.unsupported;
    bool kAtRunTime = k1 && failed(c.constantOf(k1, 1));
    c.unsupported = saved;
    if (kAtRunTime) {
      // k known only at run time (a model input): compare each element's
      // diagonal (column - row) with it.
      RankedTensorType kType = c.type(k1);
      if (!kType.getElementType().isInteger(64) || kType.getNumElements() != 1 ||
          hasSymbolicSizes(kType))
        return c.unsupportedBecause("k must be one int64");
      // column - row from two index vectors, broadcast at run time.
      Value rows = generated(c, {s[rank - 2], 1}, c.builder.getI64Type(),
                             [](ArrayRef<int64_t> i) { return double(i[0]); });
      Value columns = generated(c, {1, s[rank - 1]}, c.builder.getI64Type(),
                                [](ArrayRef<int64_t> i) { return double(i[1]); });
      Value diagonal = c.build<SubOp>({columns, rows});
      Value k = c.reshape(k1, {1, 1});
      Value mask = upper ? c.build<GeOp>({diagonal, k}) : c.build<LeOp>({diagonal, k});
      return c.finish(c.build<SelectOp>({mask, x, c.scalarLike(x, 0)}));
    }
    int64_t k = 0;
    if (k1) {
      FailureOr<double> kk = c.constantScalar(1);
      if (failed(kk))
        return failure();
      if (std::isnan(*kk))
        return emitError(c.loc) << "k is NaN";
      // Every int64 k is legal; past the matrix's extent it keeps all or
      // nothing, so clamping it there changes nothing and keeps it exact.
      double reach = static_cast<double>(s[rank - 2] + s[rank - 1]);
      k = static_cast<int64_t>(std::clamp(*kk, -reach, reach));
    }
    Value mask = generated(c, {s[rank - 2], s[rank - 1]}, c.builder.getI1Type(), [&](ArrayRef<int64_t> i) {
      int64_t diagonal = i[1] - i[0];
      return upper ? diagonal >= k : diagonal <= k;
    });
    return c.finish(c.build<SelectOp>({mask, x, c.scalarLike(x, 0)}));
  };
  m["EyeLike"] = [](NodeContext &c) -> LogicalResult {
    ArrayRef<int64_t> s = c.type(c.input(0)).getShape();
    if (s.size() != 2)
      return c.unsupportedBecause("input of rank other than 2");
    Type element = c.type(c.input(0)).getElementType();
    if (c.attr("dtype") && !(element = elementTypeOf(c.builder.getContext(), c.attrInt("dtype", 1))))
      return c.unsupportedBecause("dtype " + dataTypeName(c.attrInt("dtype", 1)));
    int64_t k = c.attrInt("k", 0);
    return c.finish(generated(c, s, element, [&](ArrayRef<int64_t> i) { return i[1] - i[0] == k; }));
  };
  m["Hardmax"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    int64_t rank = c.rank(x);
    ArrayRef<int64_t> shape = c.type(x).getShape();
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", c.opset < 13 ? 1 : -1), rank);
    if (failed(axis))
      return failure();
    Value in = x;
    int64_t a = *axis;
    if (c.opset < 13) { // coerced to 2-D at the axis
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < rank; ++d)
        (d < a ? outer : inner) *= shape[d];
      in = c.reshape(x, {outer, inner});
      a = 1;
      if (!in)
        return failure(); // the reshape said why
    }
    int64_t inRank = c.rank(in), extent = c.type(in).getDimSize(a);
    Value index = c.build<ArgMaxOp>(in, {c.named("axis", c.builder.getI64IntegerAttr(a)),
                                         c.named("keepdims", c.builder.getBoolAttr(true))});
    Value iota = generated(c, alongAxis(inRank, a, extent), c.builder.getI64Type(),
                           [&](ArrayRef<int64_t> i) { return static_cast<double>(i[a]); });
    Value y = c.cast(c.build<EqOp>({iota, index}), c.type(x).getElementType());
    return c.finish(y ? c.reshape(y, shape) : y);
  };
  m["OneHot"] = [](NodeContext &c) -> LogicalResult {
    Value indices = c.input(0), values = c.input(2);
    auto depthArgument = llvm::dyn_cast<BlockArgument>(c.input(1));
    if (depthArgument && c.type(depthArgument).hasStaticShape() &&
        c.type(depthArgument).getNumElements() == 1 && !hasSymbolicSizes(indices.getType())) {
      // The depth read at run time (ONNX gives it as any number; floats are
      // truncated to an integer).
      Type element = c.type(depthArgument).getElementType();
      SmallVector<int64_t> code;
      if (std::optional<SmallVector<AffineExpr>> ints = c.runTimeInts(1))
        appendSizeCode((*ints)[0], code);
      else if (element.isF32() || element.isF64())
        code = {static_cast<int64_t>(::kiln::ref::SizeOp::ScaledElement),
                static_cast<int64_t>(depthArgument.getArgNumber()), 0, 1};
      else
        return c.unsupportedBecause("a depth of this type read at run time");
      AffineExpr depth = c.computedSize(c.node.output(0) + ": depth", code, 1, 1 << 24);
      if (!depth)
        return failure();
      SmallVector<AffineExpr> shape = getDimSizes(c.type(indices));
      int64_t rank = shape.size() + 1;
      FailureOr<int64_t> axis = c.axis(c.attrInt("axis", -1), rank);
      if (failed(axis))
        return failure();
      Type i64 = c.builder.getI64Type();
      Value depthValue = c.cast(c.reshape(c.input(1), {}), i64);
      indices = c.cast(indices, i64);
      Value wrapped = c.build<SelectOp>({c.build<LtOp>({indices, c.constantI64(0, false)}),
                                         c.build<AddOp>({indices, depthValue}), indices});
      MLIRContext *context = c.builder.getContext();
      SmallVector<AffineExpr> expanded(shape), along(rank, getAffineConstantExpr(1, context));
      expanded.insert(expanded.begin() + *axis, getAffineConstantExpr(1, context));
      along[*axis] = depth;
      Value hot = c.build<EqOp>({c.reshapeTo(wrapped, expanded),
                                 c.reshapeTo(iotaAtRunTime(c, depth), along)});
      auto pick = [&](int64_t k) {
        Value v = c.build<SliceOp>(values, {c.named("starts", c.ints({k})),
                                            c.named("ends", c.ints({k + 1})),
                                            c.named("steps", c.ints({1}))});
        return v ? c.reshape(v, {}) : v;
      };
      return c.finish(c.build<SelectOp>({hot, pick(1), pick(0)}));
    }
    FailureOr<int64_t> depthValue = c.constantInteger(1);
    if (failed(depthValue))
      return failure();
    int64_t depth = *depthValue;
    SmallVector<int64_t> shape(c.type(indices).getShape());
    int64_t rank = shape.size() + 1;
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", -1), rank);
    if (failed(axis) || depth < 1)
      return failed(axis) ? failure() : c.unsupportedBecause("depth < 1");
    indices = c.cast(indices, c.builder.getI64Type());
    Value wrapped = c.build<SelectOp>({c.build<LtOp>({indices, c.constantI64(0, false)}),
                                       c.build<AddOp>({indices, c.constantI64(depth, false)}), indices});
    SmallVector<int64_t> expanded(shape);
    expanded.insert(expanded.begin() + *axis, 1);
    Value iota = generated(c, alongAxis(rank, *axis, depth), c.builder.getI64Type(),
                           [&](ArrayRef<int64_t> i) { return static_cast<double>(i[*axis]); });
    Value hot = c.build<EqOp>({wrapped ? c.reshape(wrapped, expanded) : wrapped, iota});
    auto pick = [&](int64_t k) {
      Value v = c.build<SliceOp>(values, {c.named("starts", c.ints({k})), c.named("ends", c.ints({k + 1})),
                                          c.named("steps", c.ints({1}))});
      return v ? c.reshape(v, {}) : v;
    };
    return c.finish(c.build<SelectOp>({hot, pick(1), pick(0)}));
  };
  m["IsInf"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    double inf = std::numeric_limits<double>::infinity();
    bool positive = c.attrInt("detect_positive", 1) != 0, negative = c.attrInt("detect_negative", 1) != 0;
    Value pos = c.build<EqOp>({x, c.scalarLike(x, inf)}), neg = c.build<EqOp>({x, c.scalarLike(x, -inf)});
    Value none = c.build<AndOp>({pos, c.build<NotOp>(pos)});
    return c.finish(positive && negative ? c.build<OrOp>({pos, neg}) : positive ? pos : negative ? neg : none);
  };
  m["Shrink"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    double lambd = c.attrFloat("lambd", 0.5f), bias = c.attrFloat("bias", 0.0f);
    Value low = c.build<LtOp>({x, c.scalarLike(x, -lambd)}), high = c.build<GtOp>({x, c.scalarLike(x, lambd)});
    Value zero = c.build<MulOp>({x, c.scalarLike(x, 0)});
    Value y = c.build<SelectOp>({high, c.build<SubOp>({x, c.scalarLike(x, bias)}), zero});
    return c.finish(c.build<SelectOp>({low, c.build<AddOp>({x, c.scalarLike(x, bias)}), y}));
  };
  m["DepthToSpace"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    ArrayRef<int64_t> s = c.type(x).getShape();
    int64_t b = c.attrInt("blocksize", 0);
    if (s.size() != 4 || b < 1 || b > s[1] / b || s[1] % (b * b))
      return c.unsupportedBecause("blocksize does not divide the channels");
    int64_t n = s[0], ch = s[1] / (b * b), h = s[2], w = s[3];
    bool crd = c.attrString("mode", "DCR") == "CRD";
    Value y = crd ? transpose(c, c.reshape(x, {n, ch, b, b, h, w}), {0, 1, 4, 2, 5, 3})
                  : transpose(c, c.reshape(x, {n, b, b, ch, h, w}), {0, 3, 4, 1, 5, 2});
    return c.finish(y ? c.reshape(y, {n, ch, h * b, w * b}) : y);
  };
  m["SpaceToDepth"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    ArrayRef<int64_t> s = c.type(x).getShape();
    int64_t b = c.attrInt("blocksize", 0);
    if (s.size() != 4 || b < 1 || s[2] % b || s[3] % b)
      return c.unsupportedBecause("blocksize does not divide the image");
    int64_t n = s[0], ch = s[1], h = s[2] / b, w = s[3] / b;
    Value y = transpose(c, c.reshape(x, {n, ch, h, b, w, b}), {0, 3, 5, 1, 2, 4});
    return c.finish(y ? c.reshape(y, {n, ch * b * b, h, w}) : y);
  };
  m["InstanceNormalization"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    int64_t rank = c.rank(x);
    if (rank < 2)
      return emitError(c.loc) << "takes an input of rank 2 or more ([N, C, ...]), got rank " << rank;
    SmallVector<int64_t> spatial, param(rank, 1);
    for (int64_t d = 2; d < rank; ++d)
      spatial.push_back(d);
    param[1] = c.type(x).getDimSize(1);
    auto [y, mean, inv] = normalize(c, x, spatial, c.attrFloat("epsilon", 1e-5f));
    Value scaled = c.build<MulOp>({y, c.reshape(c.input(1), param)});
    return c.finish(c.build<AddOp>({scaled, c.reshape(c.input(2), param)}));
  };
  m["MeanVarianceNormalization"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    SmallVector<int64_t> axes;
    if (auto a = c.attrInts("axes"))
      for (int64_t axis : *a) {
        FailureOr<int64_t> n = c.axis(axis, c.rank(x));
        if (failed(n))
          return failure();
        axes.push_back(*n);
      }
    else
      axes = {0, 2, 3};
    llvm::sort(axes);
    auto [y, mean, inv] = normalize(c, x, axes, 1e-9);
    return c.finish(y);
  };
  m["Einsum"] = [](NodeContext &c) { return einsum(c); };
  m["CumSum"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    int64_t rank = c.rank(x);
    bool exclusive = c.attrInt("exclusive", 0) != 0, reverse = c.attrInt("reverse", 0) != 0;
    // Sums along `axis`: move it last, multiply by a triangular matrix of
    // ones, move it back.
    auto sumAlong = [&](int64_t axis) -> Value {
      int64_t n = c.type(x).getDimSize(axis);
      SmallVector<int64_t> perm;
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis)
          perm.push_back(d);
      perm.push_back(axis);
      SmallVector<int64_t> inverse(rank);
      for (int64_t d = 0; d < rank; ++d)
        inverse[perm[d]] = d;
      // triangle[from, to] = 1 where element `from` adds into output `to`.
      Value triangle = generated(c, {n, n}, c.type(x).getElementType(), [&](ArrayRef<int64_t> i) {
        int64_t from = i[0], to = i[1];
        return reverse ? (exclusive ? from > to : from >= to) : (exclusive ? from < to : from <= to);
      });
      if (rank == 1) { // matmul wants a matrix: sum the row [1, n]
        Value summed = c.build<MatMulOp>({c.reshape(x, {1, n}), triangle});
        return summed ? c.reshape(summed, {n}) : summed;
      }
      Value summed = c.build<MatMulOp>({transpose(c, x, perm), triangle});
      return transpose(c, summed, inverse);
    };
    if (std::optional<SmallVector<AffineExpr>> axisAtRunTime = c.runTimeInts(1);
        axisAtRunTime && axisAtRunTime->size() == 1 && !hasSymbolicSizes(x.getType()) &&
        rank > 0) {
      // The axis read at run time: checked in range per run, and the sum
      // along each axis computed, the run's chosen (rank times the work of
      // one: give the axis with --input-value to compile one).
      if (!sizeAtRunTime(c, (*axisAtRunTime)[0], c.node.output(0) + ": axis", -rank, rank - 1))
        return failure();
      Type i64 = c.builder.getI64Type();
      Value axis = c.cast(c.reshape(c.input(1), {}), i64);
      Value negative = c.cast(c.build<LtOp>({axis, c.constantI64(0, false)}), i64);
      Value normalized =
          c.build<AddOp>({axis, c.build<MulOp>({negative, c.constantI64(rank, false)})});
      Value result = sumAlong(0);
      for (int64_t d = 1; d < rank && result; ++d)
        result = c.build<SelectOp>(
            {c.build<EqOp>({normalized, c.constantI64(d, false)}), sumAlong(d), result});
      return c.finish(result);
    }
    FailureOr<int64_t> axisValue = c.constantInteger(1);
    if (failed(axisValue))
      return failure();
    FailureOr<int64_t> axis = c.axis(*axisValue, rank);
    if (failed(axis))
      return failure();
    return c.finish(sumAlong(*axis));
  };
  m["LayerNormalization"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    int64_t rank = c.rank(x);
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", -1), rank);
    if (failed(axis))
      return failure();
    double epsilon = c.attrFloat("epsilon", 1e-5f);
    bool extraOutputs = false;
    for (int k = 1; k < c.node.output_size(); ++k)
      extraOutputs |= !c.node.output(k).empty();
    ArrayRef<int64_t> normalized = c.type(x).getShape().drop_front(*axis);
    if (!extraOutputs) { // one fused op
      auto fit = [&](Value v) {
        if (!v || c.type(v).getShape() == normalized)
          return v;
        return c.build<BroadcastOp>(v, {c.named("shape", c.ints(normalized))});
      };
      SmallVector<Value> operands = {x, fit(c.input(1))};
      if (c.input(2))
        operands.push_back(fit(c.input(2)));
      return c.finish(c.build<LayerNormOp>(operands, {c.named("axis", c.builder.getI64IntegerAttr(*axis)),
                                                       c.named("epsilon", c.builder.getF64FloatAttr(epsilon))}));
    }
    // Mean and inverse standard deviation are wanted too: decompose.
    SmallVector<int64_t> axes;
    for (int64_t d = *axis; d < rank; ++d)
      axes.push_back(d);
    auto [y, mean, inv] = normalize(c, x, axes, epsilon);
    y = c.build<MulOp>({y, c.input(1)});
    if (c.input(2))
      y = c.build<AddOp>({y, c.input(2)});
    if (failed(c.finish(y)))
      return failure();
    c.results.push_back(mean);
    c.results.push_back(inv);
    return success();
  };
}

namespace {

/// Gathers along `axis` with constant indices.
Value gatherConstant(NodeContext &c, Value v, int64_t axis, ArrayRef<int64_t> indices) {
  Value index = c.constant(DenseElementsAttr::get(
      RankedTensorType::get({static_cast<int64_t>(indices.size())}, c.builder.getI64Type()), indices));
  return c.build<GatherOp>({v, index}, {c.named("axis", c.builder.getI64IntegerAttr(axis))});
}

} // namespace

/// A window function of a size read at run time: computed from the
/// indices 0..size-1 as the constant one is.
LogicalResult windowAtRunTime(NodeContext &c, const std::string &kind, AffineExpr sizeValue) {
  Type element = elementTypeOf(c.builder.getContext(), c.attrInt("output_datatype", 1));
  if (!element || !llvm::isa<FloatType>(element))
    return c.unsupportedBecause("output type");
  AffineExpr size = sizeAtRunTime(c, sizeValue, c.node.output(0) + ".dim0", 0, 1 << 24);
  if (!size)
    return failure();
  bool periodic = c.attrInt("periodic", 1) != 0;
  // t = 2 pi k / n, n the size (periodic) or the size - 1, in f64.
  Type f64 = c.builder.getF64Type();
  Value n = c.cast(c.reshape(c.input(0), {}), f64);
  if (!periodic)
    n = c.build<SubOp>({n, c.scalarLike(n, 1)});
  Value k = c.cast(iotaAtRunTime(c, size), f64);
  Value t = c.build<DivOp>({c.build<MulOp>({k, c.scalarLike(k, 2 * M_PI)}), n});
  Value cosT = c.build<CosOp>(t);
  Value w;
  if (kind == "hann") {
    w = c.build<SubOp>({c.scalarLike(cosT, 0.5), c.build<MulOp>({cosT, c.scalarLike(cosT, 0.5)})});
  } else if (kind == "hamming") {
    w = c.build<SubOp>({c.scalarLike(cosT, 25.0 / 46),
                        c.build<MulOp>({cosT, c.scalarLike(cosT, 1 - 25.0 / 46)})});
  } else {
    Value cos2T = c.build<CosOp>(c.build<MulOp>({t, c.scalarLike(t, 2)}));
    w = c.build<AddOp>({c.build<SubOp>({c.scalarLike(cosT, 0.42),
                                        c.build<MulOp>({cosT, c.scalarLike(cosT, 0.5)})}),
                        c.build<MulOp>({cos2T, c.scalarLike(cos2T, 0.08)})});
  }
  return c.finish(c.cast(w, element));
}

/// Ops computed from constants built at import: window functions, and
/// gathers with constant index vectors (Compress, reflect/edge Pad,
/// GatherND, ReverseSequence); and LRN. Registered after the shape
/// converters, whose constant Pad it extends.
void registerGatherBasedConverters(ConverterMap &m) {
  // Window functions of a constant size: constants.
  auto window = [](const char *kind) {
    return [kind](NodeContext &c) -> LogicalResult {
      if (std::optional<SmallVector<AffineExpr>> size = c.runTimeInts(0); size && size->size() == 1)
        return windowAtRunTime(c, kind, (*size)[0]);
      FailureOr<int64_t> sizeValue = c.constantInteger(0);
      if (failed(sizeValue))
        return failure();
      int64_t size = *sizeValue;
      if (size < 0 || size > (1 << 24))
        return c.unsupportedBecause("window size out of range");
      Type element = elementTypeOf(c.builder.getContext(), c.attrInt("output_datatype", 1));
      if (!element)
        return c.unsupportedBecause("output type");
      bool periodic = c.attrInt("periodic", 1) != 0;
      double n = periodic ? size : size - 1;
      std::string k = kind;
      return c.finish(generated(c, {size}, element, [&](ArrayRef<int64_t> i) {
        double t = 2 * M_PI * i[0] / n;
        if (k == "hann")
          return 0.5 - 0.5 * std::cos(t);
        if (k == "hamming")
          return 25.0 / 46 - (1 - 25.0 / 46) * std::cos(t);
        return 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2 * t);
      }));
    };
  };
  m["HannWindow"] = window("hann");
  m["HammingWindow"] = window("hamming");
  m["BlackmanWindow"] = window("blackman");

  // Compress with a constant condition: a gather of the selected positions.
  // NonZero: the indices of the nonzero elements, one row per dimension.
  // Its length is the data's: known for a constant, and for a small
  // integer or boolean model input read at run time (its elements are
  // sizes symbols); otherwise unsupported.
  m["NonZero"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    RankedTensorType type = c.type(x);
    if (hasSymbolicSizes(type) || type.getRank() == 0)
      return c.unsupportedBecause("NonZero of a scalar or of dynamic dimensions");
    ArrayRef<int64_t> shape = type.getShape();
    int64_t rank = shape.size(), n = type.getNumElements();
    std::string saved = c.unsupported;
    FailureOr<DenseElementsAttr> constant = c.constantOf(x, 0);
    c.unsupported = saved;
    if (succeeded(constant)) {
      FailureOr<::kiln::ref::Tensor> t = toReferenceTensor(*constant);
      if (failed(t))
        return c.unsupportedBecause("NonZero of this type");
      SmallVector<int64_t> flat;
      for (int64_t k = 0; k < n; ++k)
        if (t->getDouble(k) != 0)
          flat.push_back(k);
      SmallVector<int64_t> rows(rank * flat.size());
      for (size_t j = 0; j < flat.size(); ++j)
        for (int64_t d = rank - 1, rest = flat[j]; d >= 0; rest /= shape[d], --d)
          rows[d * flat.size() + j] = rest % shape[d];
      return c.finish(c.constant(DenseElementsAttr::get(
          RankedTensorType::get({rank, static_cast<int64_t>(flat.size())}, c.builder.getI64Type()),
          ArrayRef<int64_t>(rows))));
    }
    // The flat positions of the nonzeros: of a small model input, as many
    // as its values read before the run say; of computed data, a prefix
    // of the positions with the nonzeros first, its length read once
    // computed.
    MLIRContext *context = c.builder.getContext();
    Value positions;
    AffineExpr count;
    if (c.runTimeElements(x, /*anyRank=*/true)) {
      count = nonZerosAtRunTime(c, c.node.output(0) + ".dim1", x);
      if (!count)
        return failure();
      positions = nonZeroPositions(c, c.cast(c.reshape(x, {n}), c.builder.getI64Type()), count);
    } else {
      positions = nonZeroPrefix(c, c.reshape(x, {n}), c.node.output(0) + ".dim1");
      if (!positions)
        return failure();
      count = getDimSizes(c.type(positions))[0];
    }
    // Then each dimension's index.
    SmallVector<Value> rows;
    int64_t stride = n;
    for (int64_t d = 0; d < rank; ++d) {
      stride /= std::max<int64_t>(shape[d], 1);
      Value index = c.build<ModOp>({c.build<DivOp>({positions, c.constantI64(stride, false)}),
                                    c.constantI64(shape[d], false)});
      rows.push_back(c.reshapeTo(index, {getAffineConstantExpr(1, context), count}));
    }
    if (rows.size() == 1)
      return c.finish(rows[0]);
    return c.finish(c.build<ConcatOp>(rows, {c.named("axis", c.builder.getI64IntegerAttr(0))}));
  };
  m["Compress"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    std::optional<int64_t> axisAttr;
    if (c.attr("axis"))
      axisAttr = c.attrInt("axis", 0);
    if (!axisAttr) {
      x = c.reshape(x, {c.type(x).getNumElements()});
      axisAttr = 0;
      if (!x)
        return failure();
    }
    FailureOr<int64_t> axis = c.axis(*axisAttr, c.rank(x));
    if (failed(axis))
      return failure();
    int64_t extent = c.type(x).getDimSize(*axis);
    // The condition over the axis as i64: cut, or extended with false.
    auto keepAlongAxis = [&]() {
      Value keep = c.cast(c.reshape(c.input(1), {c.type(c.input(1)).getNumElements()}),
                          c.builder.getI64Type());
      int64_t given = c.type(keep).getNumElements();
      if (given > extent)
        return c.build<SliceOp>(keep, {c.named("starts", c.ints({0})),
                                       c.named("ends", c.ints({extent})),
                                       c.named("steps", c.ints({1}))});
      if (given < extent)
        return c.build<ConcatOp>({keep, c.constantI64(SmallVector<int64_t>(extent - given, 0))},
                                 {c.named("axis", c.builder.getI64IntegerAttr(0))});
      return keep;
    };
    auto gatherAlongAxis = [&](Value positions) {
      return c.finish(c.build<GatherOp>({x, positions},
                                        {c.named("axis", c.builder.getI64IntegerAttr(*axis))}));
    };
    std::string name = c.node.output(0) + ".dim" + std::to_string(*axis);
    bool boolean = c.type(c.input(1)).getElementType().isInteger(1);
    if (c.readsAtRunTime(1) && boolean && !hasSymbolicSizes(x.getType())) {
      // The condition read at run time: as many results as it holds true
      // within the axis, gathered from the positions of the trues.
      AffineExpr kept = nonZerosAtRunTime(c, name, c.input(1), extent);
      if (!kept)
        return failure();
      return gatherAlongAxis(nonZeroPositions(c, keepAlongAxis(), kept));
    }
    std::string saved = c.unsupported;
    FailureOr<DenseElementsAttr> condition = c.constantOf(c.input(1), 1);
    if (failed(condition) && boolean && c.type(c.input(1)).hasStaticShape() &&
        !hasSymbolicSizes(x.getType())) {
      // A computed condition: the positions of its trues, a prefix whose
      // length is read once computed.
      c.unsupported = saved;
      return gatherAlongAxis(nonZeroPrefix(c, keepAlongAxis(), name));
    }
    if (failed(condition))
      return failure();
    if (!condition->getElementType().isInteger(1))
      return emitError(c.loc) << "takes a boolean condition, got " << condition->getElementType();
    SmallVector<int64_t> selected;
    int64_t k = 0;
    for (bool keep : condition->getValues<bool>()) {
      if (keep && k < extent)
        selected.push_back(k);
      ++k;
    }
    return c.finish(gatherConstant(c, x, *axis, selected));
  };

  // Reflect and edge padding: per padded axis, a gather of mirrored or
  // clamped source positions.
  m["Pad"] = [constantPad = m["Pad"]](NodeContext &c) -> LogicalResult {
    std::string mode = c.attrString("mode", "constant");
    if (c.opset >= 11 && (mode == "constant" || mode == "reflect" || mode == "edge"))
      if (std::optional<SmallVector<AffineExpr>> pads = c.runTimeInts(1))
        return padAtRunTime(c, *pads, mode);
    if (mode == "constant")
      return constantPad(c);
    if (mode != "reflect" && mode != "edge")
      return c.unsupportedBecause("pad mode '" + mode + "'");
    Value x = c.input(0);
    int64_t rank = c.rank(x);
    SmallVector<int64_t> pads;
    if (c.opset < 11) {
      auto p = c.attrInts(c.opset < 2 ? "paddings" : "pads");
      if (!p)
        return c.unsupportedBecause("no pads");
      pads.assign(p->begin(), p->end());
    } else {
      FailureOr<SmallVector<int64_t>> p = c.constantInts(1);
      if (failed(p))
        return failure();
      pads = *p;
    }
    if (static_cast<int64_t>(pads.size()) != 2 * rank)
      return c.unsupportedBecause("pads do not match the rank");
    Value y = x;
    for (int64_t d = 0; d < rank && y; ++d) {
      int64_t lo = pads[d], hi = pads[d + rank], n = c.type(x).getDimSize(d);
      if (lo == 0 && hi == 0)
        continue;
      if (lo < 0 || hi < 0 || n == 0 || (mode == "reflect" && (n < 2 || lo >= n || hi >= n)))
        return c.unsupportedBecause("pads too large for " + mode + " padding");
      // The gathered positions are a computed constant: bounded like one.
      if (lo > kMaxComputedElements || hi > kMaxComputedElements || n + lo + hi > kMaxComputedElements)
        return emitError(c.loc) << "pads " << lo << " and " << hi << " make a padded extent past "
                                << "the importer's 2^26 computed positions";
      SmallVector<int64_t> source;
      for (int64_t o = -lo; o < n + hi; ++o) {
        int64_t s = o;
        if (mode == "edge")
          s = std::clamp<int64_t>(o, 0, n - 1);
        else if (o < 0)
          s = -o;
        else if (o >= n)
          s = 2 * (n - 1) - o;
        source.push_back(s);
      }
      y = gatherConstant(c, y, d, source);
    }
    return c.finish(y);
  };

  // GatherND: flatten the indexed leading dimensions and gather once with
  // linear indices computed from the index tuples.
  m["GatherND"] = [](NodeContext &c) -> LogicalResult {
    Value data = c.input(0), indices = c.input(1);
    if (c.attrInt("batch_dims", 0) != 0)
      return c.unsupportedBecause("batch_dims");
    ArrayRef<int64_t> ds = c.type(data).getShape(), is = c.type(indices).getShape();
    if (failed(checkIndexTuples(c, ds, is)))
      return failure();
    int64_t k = is.back();
    int64_t flat = 1;
    SmallVector<double> strides(k);
    for (int64_t d = k - 1; d >= 0; --d) {
      strides[d] = flat;
      flat *= ds[d];
    }
    SmallVector<int64_t> flatShape = {flat};
    llvm::append_range(flatShape, ds.drop_front(k));
    Value flattened = c.reshape(data, flatShape);
    // Negative indices count from the end of their dimension.
    Value idx = c.build<CastOp>(indices, {c.named("to", TypeAttr::get(c.builder.getI64Type()))});
    Value dims = generated(c, {k}, c.builder.getI64Type(), [&](ArrayRef<int64_t> i) { return double(ds[i[0]]); });
    idx = c.build<SelectOp>({c.build<LtOp>({idx, c.constantI64(0, false)}), c.build<AddOp>({idx, dims}), idx});
    Value stride = generated(c, {k}, c.builder.getI64Type(), [&](ArrayRef<int64_t> i) { return strides[i[0]]; });
    Value linear = c.build<ReduceSumOp>(c.build<MulOp>({idx, stride}),
                                        {c.named("axes", c.builder.getDenseI64ArrayAttr({static_cast<int64_t>(is.size()) - 1}))});
    return c.finish(c.build<GatherOp>({flattened, linear}, {c.named("axis", c.builder.getI64IntegerAttr(0))}));
  };

  // ScatterElements (and its deprecated name Scatter) map onto the op.
  auto scatter = [](NodeContext &c) -> LogicalResult {
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", 0), c.rank(c.input(0)));
    if (failed(axis))
      return failure();
    std::string reduction = c.attrString("reduction", "none");
    if (reduction != "none" && reduction != "add" && reduction != "mul")
      return c.unsupportedBecause("reduction '" + reduction + "'");
    return c.finish(c.build<ScatterElementsOp>(
        {c.input(0), c.input(1), c.input(2)},
        {c.named("axis", c.builder.getI64IntegerAttr(*axis)),
         c.named("reduction", c.builder.getStringAttr(reduction))}));
  };
  m["ScatterElements"] = scatter;
  m["Scatter"] = scatter;

  // ScatterND: each index tuple addresses a slice of the data; flatten the
  // addressed dimensions to one axis and scatter whole rows along it.
  m["ScatterND"] = [](NodeContext &c) -> LogicalResult {
    Value data = c.input(0), indices = c.input(1), updates = c.input(2);
    std::string reduction = c.attrString("reduction", "none");
    if (reduction != "none" && reduction != "add" && reduction != "mul")
      return c.unsupportedBecause("reduction '" + reduction + "'");
    ArrayRef<int64_t> ds = c.type(data).getShape(), is = c.type(indices).getShape();
    if (failed(checkIndexTuples(c, ds, is)))
      return failure();
    int64_t k = is.back(), count = 1, inner = 1, flat = 1;
    for (size_t d = 0; d + 1 < is.size(); ++d)
      count *= is[d];
    for (size_t d = k; d < ds.size(); ++d)
      inner *= ds[d];
    SmallVector<double> strides(k);
    for (int64_t d = k - 1; d >= 0; --d) {
      strides[d] = flat;
      flat *= ds[d];
    }
    Value idx = c.build<CastOp>(indices, {c.named("to", TypeAttr::get(c.builder.getI64Type()))});
    Value stride = generated(c, {k}, c.builder.getI64Type(), [&](ArrayRef<int64_t> i) { return strides[i[0]]; });
    Value dims = generated(c, {k}, c.builder.getI64Type(), [&](ArrayRef<int64_t> i) { return double(ds[i[0]]); });
    idx = c.build<SelectOp>({c.build<LtOp>({idx, c.constantI64(0, false)}), c.build<AddOp>({idx, dims}), idx});
    Value linear = c.build<ReduceSumOp>(c.build<MulOp>({idx, stride}),
                                        {c.named("axes", c.ints({static_cast<int64_t>(is.size()) - 1}))});
    // Rows of `inner` elements: the row index repeated across the row.
    Value rows = linear ? c.build<BroadcastOp>(c.reshape(linear, {count, 1}),
                                               {c.named("shape", c.ints({count, inner}))})
                        : linear;
    Value result = c.build<ScatterElementsOp>(
        {c.reshape(data, {flat, inner}), rows, c.reshape(updates, {count, inner})},
        {c.named("axis", c.builder.getI64IntegerAttr(0)),
         c.named("reduction", c.builder.getStringAttr(reduction))});
    return c.finish(result ? c.reshape(result, ds) : result);
  };

  // TopK: a stable argsort sliced to k; values gathered with it.
  m["TopK"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    int64_t k;
    std::optional<SmallVector<AffineExpr>> kAtRunTime =
        c.opset < 10 ? std::nullopt : c.runTimeInts(1);
    if (kAtRunTime) {
      // k read at run time: the sorted order sliced to it.
      FailureOr<int64_t> axis = c.axis(c.attrInt("axis", -1), c.rank(x));
      if (failed(axis))
        return failure();
      if (kAtRunTime->size() != 1 || hasSymbolicSizes(x.getType()))
        return c.unsupportedBecause("k read at run time must be one value, over static shapes");
      RankedTensorType type = c.type(x);
      AffineExpr kk = sizeAtRunTime(c, (*kAtRunTime)[0], c.node.output(0) + ".dim" +
                                    std::to_string(*axis), 0, type.getDimSize(*axis));
      if (!kk)
        return failure();
      MLIRContext *context = c.builder.getContext();
      bool largest = c.attrInt("largest", 1) != 0;
      Value order = c.build<ArgSortOp>(x, {c.named("axis", c.builder.getI64IntegerAttr(*axis)),
                                           c.named("descending", c.builder.getBoolAttr(largest))});
      SmallVector<int64_t> starts(c.rank(x), 0), ends(type.getShape()), steps(c.rank(x), 1);
      SmallVector<AffineExpr> endSizes;
      for (int64_t e : ends)
        endSizes.push_back(getAffineConstantExpr(e, context));
      ends[*axis] = 0;
      endSizes[*axis] = kk;
      Value indices = c.build<SliceOp>(
          order, {c.named("starts", c.ints(starts)), c.named("ends", c.ints(ends)),
                  c.named("steps", c.ints(steps)),
                  c.named("end_sizes", AffineMapAttr::get(getSizesMap(endSizes, context)))});
      Value values = c.build<GatherElementsOp>(
          {x, indices}, {c.named("axis", c.builder.getI64IntegerAttr(*axis))});
      if (failed(c.finish(values)))
        return failure();
      return c.finish(indices);
    }
    if (c.opset < 10) {
      k = c.attrInt("k", 0);
    } else {
      FailureOr<int64_t> kk = c.constantInteger(1);
      if (failed(kk))
        return failure();
      k = *kk;
    }
    FailureOr<int64_t> axis = c.axis(c.attrInt("axis", -1), c.rank(x));
    if (failed(axis))
      return failure();
    if (k < 0 || k > c.type(x).getDimSize(*axis))
      return c.unsupportedBecause("k out of range");
    bool largest = c.attrInt("largest", 1) != 0;
    Value order = c.build<ArgSortOp>(x, {c.named("axis", c.builder.getI64IntegerAttr(*axis)),
                                         c.named("descending", c.builder.getBoolAttr(largest))});
    SmallVector<int64_t> starts(c.rank(x), 0), ends(c.type(x).getShape()), steps(c.rank(x), 1);
    ends[*axis] = k;
    Value indices = c.build<SliceOp>(order, {c.named("starts", c.ints(starts)), c.named("ends", c.ints(ends)),
                                             c.named("steps", c.ints(steps))});
    Value values = c.build<GatherElementsOp>({x, indices}, {c.named("axis", c.builder.getI64IntegerAttr(*axis))});
    if (failed(c.finish(values)))
      return failure();
    return c.finish(indices);
  };

  // DFT along an axis as matmuls with constant cosine and sine matrices.
  m["DFT"] = [](NodeContext &c) -> LogicalResult {
    if (c.opset >= 20) // DFT-20 takes its axis as an input, counted from the end
      return c.unsupportedBecause("DFT from opset 20");
    Value x = c.input(0);
    int64_t rank = c.rank(x);
    ArrayRef<int64_t> xs = c.type(x).getShape();
    if (rank < 3 || (xs.back() != 1 && xs.back() != 2))
      return c.unsupportedBecause("input must end in a dimension of 1 (real) or 2 (complex)");
    FailureOr<int64_t> axisValue = c.axis(c.attrInt("axis", 1), rank - 1);
    if (failed(axisValue))
      return failure();
    int64_t axis = *axisValue, n = xs[axis];
    if (c.input(1)) {
      FailureOr<int64_t> length = c.constantInteger(1);
      if (failed(length))
        return failure();
      if (*length != n)
        return c.unsupportedBecause("dft_length other than the signal length");
    }
    bool inverse = c.attrInt("inverse", 0) != 0, onesided = c.attrInt("onesided", 0) != 0;
    int64_t outN = onesided ? n / 2 + 1 : n;
    Type element = c.type(x).getElementType();
    // Move the axis last: [..., n] for the real and imaginary parts.
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank - 1; ++d)
      if (d != axis)
        perm.push_back(d);
    perm.push_back(axis);
    SmallVector<int64_t> inverseOrder(rank - 1);
    for (int64_t d = 0; d < rank - 1; ++d)
      inverseOrder[perm[d]] = d;
    auto part = [&](int64_t k) {
      SmallVector<int64_t> starts(rank, 0), ends(xs), steps(rank, 1);
      starts[rank - 1] = k;
      ends[rank - 1] = k + 1;
      Value v = c.build<SliceOp>(x, {c.named("starts", c.ints(starts)), c.named("ends", c.ints(ends)),
                                     c.named("steps", c.ints(steps))});
      v = v ? c.reshape(v, xs.drop_back()) : v;
      return c.build<TransposeOp>(v, {c.named("perm", c.ints(perm))});
    };
    double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / n : 1.0;
    Value cosine = generated(c, {n, outN}, element, [&](ArrayRef<int64_t> i) {
      return std::cos(2 * M_PI * i[0] * i[1] / n) * scale;
    });
    Value sine = generated(c, {n, outN}, element, [&](ArrayRef<int64_t> i) {
      return sign * std::sin(2 * M_PI * i[0] * i[1] / n) * scale;
    });
    // (xr + i xi)(cos + i s) = (xr cos - xi s) + i (xr s + xi cos), s = sign * sin.
    Value xr = part(0), xi = xs.back() == 2 ? part(1) : Value();
    auto mm = [&](Value a, Value b) { return c.build<MatMulOp>({a, b}); };
    Value yr = mm(xr, cosine), yi = mm(xr, sine);
    if (xi) {
      yr = c.build<SubOp>({yr, mm(xi, sine)});
      yi = c.build<AddOp>({yi, mm(xi, cosine)});
    }
    auto back = [&](Value v) {
      v = c.build<TransposeOp>(v, {c.named("perm", c.ints(inverseOrder))});
      if (!v)
        return v;
      SmallVector<int64_t> shape(c.type(v).getShape());
      shape.push_back(1);
      return c.reshape(v, shape);
    };
    return c.finish(c.build<ConcatOp>({back(yr), back(yi)},
                                      {c.named("axis", c.builder.getI64IntegerAttr(rank - 1))}));
  };

  // Local response normalisation across channels. The window sum is an
  // average pool over the channel axis (padding counted) times the window:
  // a constant number of ops for any size, where a slice per window
  // position built millions of ops for wide windows over many channels (a
  // structure-aware fuzzer finding).
  m["LRN"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    int64_t size = c.attrInt("size", 1), rank = c.rank(x);
    double alpha = c.attrFloat("alpha", 1e-4f), beta = c.attrFloat("beta", 0.75f),
           bias = c.attrFloat("bias", 1.0f);
    if (rank < 3 || size < 1)
      return c.unsupportedBecause("input or size");
    if (!isa<FloatType>(c.type(x).getElementType()))
      return emitError(c.loc) << "takes a floating-point input, got " << c.type(x).getElementType();
    if (c.type(x).getNumElements() == 0)
      return c.finish(x); // nothing to normalise (and no window fits)
    ArrayRef<int64_t> shape = c.type(x).getShape();
    int64_t batch = shape[0], channels = shape[1], rest = 1;
    for (int64_t d : shape.drop_front(2))
      rest *= d;
    // Window positions farther than channels - 1 from every channel read
    // only padding: leave them out, so a huge `size` pools a small window.
    int64_t reach = std::max<int64_t>(channels - 1, 0);
    int64_t before = std::min((size - 1) / 2, reach);
    int64_t after = std::min(size - 1 - (size - 1) / 2, reach);
    int64_t window = before + after + 1;
    // [N, C, ...] -> [N, 1, C, rest]: channels become the pooled height.
    Value planes = c.reshape(c.build<MulOp>({x, x}), {batch, 1, channels, rest});
    Value mean = c.build<AvgPool2dOp>(
        planes, {c.named("kernel", c.ints({window, 1})), c.named("padding", c.ints({before, 0, after, 0})),
                 c.named("count_include_pad", c.builder.getBoolAttr(true))});
    Value sum = c.reshape(mean, shape);
    // bias + alpha / size * (window * mean)
    double scale = alpha * static_cast<double>(window) / static_cast<double>(size);
    Value scaled = c.build<AddOp>({c.build<MulOp>({sum, c.scalarLike(x, scale)}), c.scalarLike(x, bias)});
    return c.finish(c.build<DivOp>({x, c.build<PowOp>({scaled, c.scalarLike(x, beta)})}));
  };

  // ReverseSequence with constant lengths: gather_elements with constant
  // reversed positions.
  m["ReverseSequence"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    ArrayRef<int64_t> s = c.type(x).getShape();
    int64_t timeAxis = c.attrInt("time_axis", 0), batchAxis = c.attrInt("batch_axis", 1);
    if (s.size() < 2 || (timeAxis != 0 && timeAxis != 1) || batchAxis != 1 - timeAxis)
      return c.unsupportedBecause("axes");
    if (c.readsAtRunTime(1) && !hasSymbolicSizes(x.getType())) {
      // Lengths read at run time: checked within the time axis per run,
      // then positions t < length reversed as for constant lengths.
      int64_t given = c.type(c.input(1)).getNumElements();
      if (given != s[batchAxis])
        return emitError(c.loc) << "has " << given << " sequence lengths for a batch of "
                                << s[batchAxis];
      if (failed(checkAllWithin(c, c.node.output(0) + ": sequence lengths within 0.." +
                                       std::to_string(s[timeAxis]),
                                1, 0, s[timeAxis])))
        return failure();
      Type i64 = c.builder.getI64Type();
      SmallVector<int64_t> lengthShape(s.size(), 1);
      lengthShape[batchAxis] = s[batchAxis];
      Value length = c.reshape(c.cast(c.input(1), i64), lengthShape);
      Value t = generated(c, s, i64, [&](ArrayRef<int64_t> i) { return double(i[timeAxis]); });
      Value reversed = c.build<SubOp>({c.build<SubOp>({length, c.constantI64(1, false)}), t});
      Value index = c.build<SelectOp>({c.build<LtOp>({t, length}), reversed, t});
      return c.finish(c.build<GatherElementsOp>(
          {x, index}, {c.named("axis", c.builder.getI64IntegerAttr(timeAxis))}));
    }
    FailureOr<SmallVector<int64_t>> lengths = c.constantInts(1);
    if (failed(lengths))
      return failure();
    if (static_cast<int64_t>(lengths->size()) != s[batchAxis])
      return emitError(c.loc) << "has " << lengths->size() << " sequence lengths for a batch of "
                              << s[batchAxis];
    for (int64_t len : *lengths)
      if (len < 0 || len > s[timeAxis])
        return emitError(c.loc) << "sequence length " << len << " is outside [0, " << s[timeAxis]
                                << "]";
    Value index = generated(c, s, c.builder.getI64Type(), [&](ArrayRef<int64_t> i) {
      int64_t t = i[timeAxis], len = (*lengths)[i[batchAxis]];
      return double(t < len ? len - 1 - t : t);
    });
    return c.finish(c.build<GatherElementsOp>({x, index}, {c.named("axis", c.builder.getI64IntegerAttr(timeAxis))}));
  };
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
