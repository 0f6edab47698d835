//===- ResizeOps.cpp - ONNX Resize and ConvTranspose ----------------------===//
//
// Resize is separable: along each resized axis, every output coordinate maps
// to a few input coordinates with fixed weights (1 for nearest, 2 for linear,
// 4 for cubic). Shapes are static, so the indices and weights are constants:
// each axis becomes gathers, multiplications by weight vectors and sums.
//
// ConvTranspose is a convolution of the input with zeros inserted between
// its elements (the stride), padded, with the filter flipped and its
// channel dimensions swapped.
//
//===----------------------------------------------------------------------===//

#include "OnnxContext.h"

#include "kiln/IR/ReferenceConversion.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Reference/SizeCode.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

Value vectorConstant(NodeContext &c, ArrayRef<double> values, Type element,
                     int64_t rank, int64_t axis) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = values.size();
  ::kiln::ref::Tensor t =
      ::kiln::ref::Tensor::zeros(*toReferenceDType(element), ::kiln::ref::Shape(shape.begin(), shape.end()));
  for (size_t k = 0; k < values.size(); ++k)
    t.setDouble(k, values[k]);
  return c.constant(toElementsAttr(t, RankedTensorType::get(shape, element)));
}

/// The input coordinate of output coordinate `o` along an axis.
double sourceCoordinate(const std::string &mode, double o, int64_t in, int64_t out, double scale) {
  if (mode == "asymmetric")
    return o / scale;
  if (mode == "align_corners") { // with the unrounded output length in * scale, as ONNX does
    double length = in * scale;
    return length <= 1 ? 0.0 : o * (in - 1) / (length - 1);
  }
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "tf_half_pixel_for_nearest")
    return (o + 0.5) / scale;
  return (o + 0.5) / scale - 0.5; // half_pixel
}

double cubicWeight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1)
    return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2)
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

/// Resize with scales or sizes read at run time: the same per-axis taps as
/// the constant tables below, computed per run from the output positions
/// (kiln.iota) in f64. `outSizes` are the output's sizes; `scaleOf(d)` and
/// `lengthOf(d)` the scale and the output length along d as scalar f64
/// tensors.
LogicalResult resizeAtRunTime(NodeContext &c, ArrayRef<AffineExpr> outSizes,
                              function_ref<Value(int64_t)> scaleOf,
                              function_ref<Value(int64_t)> lengthOf, const std::string &mode,
                              const std::string &transform, const std::string &nearest, double a,
                              bool excludeOutside) {
  Value x = c.input(0);
  ArrayRef<int64_t> in = c.type(x).getShape();
  int64_t rank = in.size();
  Type element = c.type(x).getElementType(), f64 = c.builder.getF64Type(),
       i64 = c.builder.getI64Type();
  auto k = [&](Value like, double value) { return c.scalarLike(like, value); };
  auto add = [&](Value p, Value q) { return c.build<AddOp>({p, q}); };
  auto sub = [&](Value p, Value q) { return c.build<SubOp>({p, q}); };
  auto mul = [&](Value p, Value q) { return c.build<MulOp>({p, q}); };
  auto div = [&](Value p, Value q) { return c.build<DivOp>({p, q}); };
  auto select = [&](Value cond, Value p, Value q) { return c.build<SelectOp>({cond, p, q}); };
  auto clamp = [&](Value v, double lo, double hi) {
    return c.build<MinOp>({c.build<MaxOp>({v, k(v, lo)}), k(v, hi)});
  };
  Value y = x;
  for (int64_t d = 0; d < rank && y; ++d) {
    int64_t n = in[d];
    if (n == 0)
      return c.unsupportedBecause("resizes an empty dimension by values read at run time");
    Value scale = scaleOf(d);
    Value o = c.cast(iotaAtRunTime(c, outSizes[d]), f64);
    if (!o || !scale)
      return failure();
    // The input coordinate of each output position (sourceCoordinate).
    Value half = k(o, 0.5), s;
    if (transform == "asymmetric") {
      s = div(o, scale);
    } else if (transform == "align_corners") {
      Value length = mul(scale, k(scale, n));
      s = select(c.build<LeOp>({length, k(length, 1)}), k(o, 0.0),
                 div(mul(o, k(o, n - 1)), sub(length, k(length, 1))));
    } else if (transform == "pytorch_half_pixel") {
      Value length = lengthOf(d);
      s = select(c.build<GtOp>({length, k(length, 1)}), sub(div(add(o, half), scale), half),
                 k(o, 0.0));
    } else if (transform == "tf_half_pixel_for_nearest") {
      s = div(add(o, half), scale);
    } else {
      s = sub(div(add(o, half), scale), half);
    }
    SmallVector<Value> indices, weights;
    if (mode == "nearest") {
      Value r;
      if (nearest == "floor")
        r = c.build<FloorOp>(s);
      else if (nearest == "ceil")
        r = c.build<CeilOp>(s);
      else if (nearest == "round_prefer_ceil")
        r = c.build<FloorOp>(add(s, half));
      else // round_prefer_floor: halves go down
        r = select(c.build<EqOp>({sub(s, c.build<FloorOp>(s)), half}), c.build<FloorOp>(s),
                   c.build<RoundOp>(s));
      indices.push_back(c.cast(clamp(r, 0, n - 1), i64));
    } else if (mode == "linear") {
      Value clamped = clamp(s, 0, n - 1);
      Value lo = c.build<FloorOp>(clamped);
      Value t = sub(clamped, lo);
      indices = {c.cast(lo, i64), c.cast(c.build<MinOp>({add(lo, k(lo, 1)), k(lo, n - 1)}), i64)};
      weights = {sub(k(t, 1), t), t};
    } else {
      Value base = c.build<FloorOp>(s);
      Value t = sub(s, base), total;
      for (int tap = 0; tap < 4; ++tap) {
        Value i = add(base, k(base, tap - 1));
        // cubicWeight(t - (tap - 1)).
        Value u = c.build<AbsOp>(sub(t, k(t, tap - 1)));
        Value near = add(mul(mul(sub(mul(k(u, a + 2), u), k(u, a + 3)), u), u), k(u, 1));
        Value far = sub(mul(add(mul(sub(mul(k(u, a), u), k(u, 5 * a)), u), k(u, 8 * a)), u),
                        k(u, 4 * a));
        Value w = select(c.build<LeOp>({u, k(u, 1)}), near,
                         select(c.build<LtOp>({u, k(u, 2)}), far, k(u, 0)));
        if (excludeOutside)
          w = select(c.build<OrOp>({c.build<LtOp>({i, k(i, 0)}), c.build<GeOp>({i, k(i, n)})}),
                     k(w, 0), w);
        total = total ? add(total, w) : w;
        indices.push_back(c.cast(clamp(i, 0, n - 1), i64));
        weights.push_back(w);
      }
      if (excludeOutside)
        for (Value &w : weights)
          w = select(c.build<EqOp>({total, k(total, 0)}), w, div(w, total));
    }
    // Gather the taps along d and weight them (weights along d only).
    SmallVector<AffineExpr> along(rank, getAffineConstantExpr(1, c.builder.getContext()));
    along[d] = outSizes[d];
    Value sum;
    for (size_t tap = 0; tap < indices.size() && y; ++tap) {
      Value picked = c.build<GatherOp>({y, indices[tap]},
                                       {c.named("axis", c.builder.getI64IntegerAttr(d))});
      if (!weights.empty())
        picked = mul(picked, c.reshapeTo(c.cast(weights[tap], element), along));
      sum = sum ? add(sum, picked) : picked;
    }
    y = sum;
  }
  return c.finish(y);
}

} // namespace

void registerResizeConverters(ConverterMap &m) {
  auto resize = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    ArrayRef<int64_t> in = c.type(x).getShape();
    int64_t rank = in.size();
    std::string mode = c.attrString("mode", "nearest");
    std::string transform = c.attrString("coordinate_transformation_mode",
                                         c.opset < 11 ? "asymmetric" : "half_pixel");
    // Upsample (before Resize existed) rounds nearest coordinates down.
    std::string nearest = c.attrString("nearest_mode", c.node.op_type() == "Upsample" ? "floor"
                                                                                     : "round_prefer_floor");
    double a = c.attrFloat("cubic_coeff_a", -0.75f);
    bool excludeOutside = c.attrInt("exclude_outside", 0) != 0;
    if (transform == "tf_crop_and_resize")
      return c.unsupportedBecause("tf_crop_and_resize");
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      return c.unsupportedBecause("mode '" + mode + "'");
    // Scales or sizes read at run time (model inputs).
    {
      size_t scalesInput = c.opset < 11 || c.node.op_type() == "Upsample" ? 1 : 2;
      size_t sizesInput = scalesInput + 1;
      Value scalesValue = c.opset < 9 ? Value() : c.input(scalesInput);
      auto scalesArgument = llvm::dyn_cast_or_null<BlockArgument>(scalesValue);
      bool haveScales = scalesValue && c.type(scalesValue).getNumElements() > 0;
      std::optional<SmallVector<AffineExpr>> sizesAtRunTime =
          c.node.op_type() == "Resize" && c.opset >= 11 && !haveScales
              ? c.runTimeInts(sizesInput)
              : std::nullopt;
      RankedTensorType xType = c.type(x);
      bool scalesAtRunTime = scalesArgument && c.type(scalesArgument).hasStaticShape() &&
                             c.type(scalesArgument).getNumElements() == rank &&
                             (c.type(scalesArgument).getElementType().isF32() ||
                              c.type(scalesArgument).getElementType().isF64());
      if (scalesAtRunTime || sizesAtRunTime) {
        if (hasSymbolicSizes(xType) || !llvm::isa<FloatType>(xType.getElementType()))
          return c.unsupportedBecause(
              "a resize by values read at run time takes static float data");
        Type f64 = c.builder.getF64Type();
        SmallVector<AffineExpr> outSizes;
        for (int64_t d = 0; d < rank; ++d) {
          SmallVector<int64_t> code;
          if (scalesAtRunTime)
            code = {static_cast<int64_t>(::kiln::ref::SizeOp::ScaledElement),
                    static_cast<int64_t>(scalesArgument.getArgNumber()), d, in[d]};
          else if (static_cast<int64_t>(sizesAtRunTime->size()) == rank)
            appendSizeCode((*sizesAtRunTime)[d], code);
          else
            return c.unsupportedBecause("sizes do not match the rank");
          AffineExpr size = c.computedSize(c.node.output(0) + ".dim" + std::to_string(d), code, 0,
                                           int64_t(1) << 31);
          if (!size)
            return failure();
          outSizes.push_back(size);
        }
        // The scale along d: the input's, or the output size over the input's.
        Value source = scalesAtRunTime ? scalesValue : c.input(sizesInput);
        auto element = [&](int64_t d) -> Value {
          Value e = c.build<SliceOp>(source, {c.named("starts", c.ints({d})),
                                              c.named("ends", c.ints({d + 1})),
                                              c.named("steps", c.ints({1}))});
          return e ? c.cast(c.reshape(e, {}), f64) : e;
        };
        auto scaleOf = [&](int64_t d) -> Value {
          Value e = element(d);
          return scalesAtRunTime || !e ? e : c.build<DivOp>({e, c.scalarLike(e, in[d])});
        };
        auto lengthOf = [&](int64_t d) -> Value {
          Value e = element(d);
          return !scalesAtRunTime || !e
                     ? e
                     : c.build<FloorOp>(c.build<MulOp>({e, c.scalarLike(e, in[d])}));
        };
        return resizeAtRunTime(c, outSizes, scaleOf, lengthOf, mode, transform, nearest, a,
                               excludeOutside);
      }
    }
    // Scales or sizes: an attribute before opset 10, inputs after.
    SmallVector<double> scales;
    SmallVector<int64_t> sizes;
    if (c.opset < 10 || c.node.op_type() == "Upsample") {
      if (c.opset < 9 && c.node.op_type() == "Upsample") {
        auto s = c.attr("scales");
        if (s)
          for (float v : s->floats())
            scales.push_back(v);
      } else {
        FailureOr<DenseElementsAttr> s = c.constantOf(c.input(1), 1);
        if (failed(s))
          return failure();
        FailureOr<::kiln::ref::Tensor> values = toReferenceTensor(*s);
        if (failed(values) || !values->isFloat())
          return c.unsupportedBecause("scales must be floating-point");
        scales.append(values->f.begin(), values->f.end());
      }
    } else {
      size_t scalesInput = c.opset < 11 ? 1 : 2, sizesInput = scalesInput + 1;
      Value scalesValue = c.input(scalesInput);
      bool haveScales = scalesValue && c.type(scalesValue).getNumElements() > 0;
      if (haveScales) {
        FailureOr<DenseElementsAttr> s = c.constantOf(scalesValue, scalesInput);
        if (failed(s))
          return failure();
        FailureOr<::kiln::ref::Tensor> values = toReferenceTensor(*s);
        if (failed(values) || !values->isFloat())
          return c.unsupportedBecause("scales must be floating-point");
        scales.append(values->f.begin(), values->f.end());
      } else if (c.input(sizesInput)) {
        FailureOr<SmallVector<int64_t>> s = c.constantInts(sizesInput);
        if (failed(s))
          return failure();
        sizes = *s;
      }
    }
    // Output sizes must be tensor sizes (and convert from the scales); the
    // dimensions that change are bounded again below, where tables are built.
    constexpr double kMaxExtent = double(::kiln::ref::kMaxElements);
    if (!sizes.empty()) {
      if (static_cast<int64_t>(sizes.size()) != rank)
        return c.unsupportedBecause("sizes do not match the rank");
      for (int64_t d = 0; d < rank; ++d) {
        if (sizes[d] < 0 || sizes[d] > kMaxExtent)
          return emitError(c.loc) << "output size " << sizes[d] << " is outside [0, 2^40]";
        scales.push_back(double(sizes[d]) / in[d]);
      }
    } else {
      if (static_cast<int64_t>(scales.size()) != rank)
        return c.unsupportedBecause("scales do not match the rank");
      for (int64_t d = 0; d < rank; ++d) {
        double extent = std::floor(in[d] * scales[d]);
        if (!(scales[d] > 0) || !(extent <= kMaxExtent))
          return emitError(c.loc) << "scale " << scales[d] << " gives an output size outside [0, 2^40]";
        sizes.push_back(static_cast<int64_t>(extent));
      }
    }
    Type element = c.type(x).getElementType();
    if (!llvm::isa<FloatType>(element))
      return c.unsupportedBecause("integer data");
    Value y = x;
    for (int64_t d = 0; d < rank && y; ++d) {
      if (sizes[d] == in[d] && scales[d] == 1.0)
        continue;
      int64_t n = in[d], out = sizes[d];
      if (n == 0) { // no positions to sample from
        if (out == 0)
          continue;
        return emitError(c.loc) << "cannot resize the empty dimension " << d << " to " << out;
      }
      // Each changed extent is built as index and weight tables: at most the
      // importer's limit on the constants it computes.
      if (out > kMaxComputedElements)
        return emitError(c.loc) << "output size " << out << " of dimension " << d
                                << " is past the importer's 2^26 computed positions";
      // Taps: for each of up to 4 input positions, an index and a weight.
      int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
      std::vector<std::vector<int64_t>> index(taps, std::vector<int64_t>(out));
      std::vector<std::vector<double>> weight(taps, std::vector<double>(out, 0.0));
      for (int64_t o = 0; o < out; ++o) {
        double s = sourceCoordinate(transform, o, n, out, scales[d]);
        if (mode == "nearest") {
          double r;
          if (nearest == "floor")
            r = std::floor(s);
          else if (nearest == "ceil")
            r = std::ceil(s);
          else if (nearest == "round_prefer_ceil")
            r = std::floor(s + 0.5);
          else // round_prefer_floor: halves go down
            r = (s - std::floor(s) == 0.5) ? std::floor(s) : std::round(s);
          index[0][o] = std::clamp<int64_t>(static_cast<int64_t>(r), 0, n - 1);
          weight[0][o] = 1.0;
        } else if (mode == "linear") {
          s = std::clamp(s, 0.0, double(n - 1));
          int64_t lo = static_cast<int64_t>(std::floor(s));
          int64_t hi = std::min<int64_t>(lo + 1, n - 1);
          double t = s - lo;
          index[0][o] = lo, weight[0][o] = 1 - t;
          index[1][o] = hi, weight[1][o] = t;
        } else {
          int64_t base = static_cast<int64_t>(std::floor(s));
          double t = s - base, total = 0;
          for (int k = 0; k < 4; ++k) {
            int64_t i = base - 1 + k;
            double w = cubicWeight(t - (k - 1), a);
            if (excludeOutside && (i < 0 || i >= n))
              w = 0;
            index[k][o] = std::clamp<int64_t>(i, 0, n - 1);
            weight[k][o] = w;
            total += w;
          }
          if (excludeOutside && total != 0)
            for (int k = 0; k < 4; ++k)
              weight[k][o] /= total;
        }
      }
      Value sum;
      for (int k = 0; k < taps && y; ++k) {
        Value indices = c.constant(DenseElementsAttr::get(
            RankedTensorType::get({out}, c.builder.getI64Type()), ArrayRef<int64_t>(index[k])));
        Value picked = c.build<GatherOp>({y, indices}, {c.named("axis", c.builder.getI64IntegerAttr(d))});
        if (taps > 1)
          picked = c.build<MulOp>({picked, vectorConstant(c, weight[k], element, rank, d)});
        sum = sum ? c.build<AddOp>({sum, picked}) : picked;
      }
      y = sum;
    }
    return c.finish(y);
  };
  m["Resize"] = resize;
  m["Upsample"] = resize;

  // GridSample: sampling positions come from data (the grid), so the
  // indices are computed in the graph: unnormalise, pad (border clamps,
  // reflection mirrors, zeros masks), then gather the 1 (nearest) or 4
  // (bilinear) neighbours from the flattened image and weight them.
  m["GridSample"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), grid = c.input(1);
    ArrayRef<int64_t> xs = c.type(x).getShape(), gs = c.type(grid).getShape();
    std::string mode = c.attrString("mode", "bilinear"), padding = c.attrString("padding_mode", "zeros");
    bool alignCorners = c.attrInt("align_corners", 0) != 0;
    if (xs.size() != 4 || gs.size() != 4 || gs[3] != 2)
      return c.unsupportedBecause("only 2-D sampling");
    if (mode != "bilinear" && mode != "nearest")
      return c.unsupportedBecause("mode '" + mode + "'");
    int64_t n = xs[0], channels = xs[1], h = xs[2], w = xs[3], oh = gs[1], ow = gs[2];
    auto scalar = [&](double v) { return c.scalarLike(grid, v); };
    auto component = [&](int64_t k) {
      Value v = c.build<SliceOp>(grid, {c.named("starts", c.ints({0, 0, 0, k})),
                                        c.named("ends", c.ints({n, oh, ow, k + 1})),
                                        c.named("steps", c.ints({1, 1, 1, 1}))});
      return v ? c.reshape(v, {n, oh, ow}) : v;
    };
    auto unnormalise = [&](Value g, int64_t size) {
      Value plusOne = c.build<AddOp>({g, scalar(1)});
      return alignCorners ? c.build<MulOp>({plusOne, scalar((size - 1) / 2.0)})
                          : c.build<MulOp>({c.build<SubOp>({c.build<MulOp>({plusOne, scalar(size)}), scalar(1)}),
                                            scalar(0.5)});
    };
    auto clampTo = [&](Value v, int64_t size) {
      return c.build<MinOp>({c.build<MaxOp>({v, scalar(0)}), scalar(size - 1)});
    };
    auto reflect = [&](Value v, int64_t size) {
      double lo = alignCorners ? 0 : -0.5, hi = alignCorners ? size - 1 : size - 0.5, range = hi - lo;
      if (range <= 0)
        return c.build<MulOp>({v, scalar(0)});
      Value dx = c.build<AbsOp>(c.build<SubOp>({v, scalar(lo)}));
      Value flips = c.build<FloorOp>(c.build<DivOp>({dx, scalar(range)}));
      Value extra = c.build<SubOp>({dx, c.build<MulOp>({flips, scalar(range)})});
      Value even = c.build<EqOp>({c.build<ModOp>({flips, scalar(2)}, {c.named("fmod", c.builder.getBoolAttr(true))}),
                                  scalar(0)});
      return c.build<SelectOp>({even, c.build<AddOp>({extra, scalar(lo)}),
                                c.build<SubOp>({scalar(hi), extra})});
    };
    Value px = unnormalise(component(0), w), py = unnormalise(component(1), h);
    if (padding == "border") {
      px = clampTo(px, w);
      py = clampTo(py, h);
    } else if (padding == "reflection") {
      px = clampTo(reflect(px, w), w);
      py = clampTo(reflect(py, h), h);
    } else if (padding != "zeros") {
      return c.unsupportedBecause("padding_mode '" + padding + "'");
    }
    Value image = c.reshape(x, {n, channels, h * w});
    // One neighbour: its value times `weight`, or 0 outside the image.
    auto sample = [&](Value iy, Value ix, Value weight) -> Value {
      Value inside = c.build<AndOp>({c.build<AndOp>({c.build<GeOp>({ix, scalar(0)}), c.build<LeOp>({ix, scalar(w - 1)})}),
                                     c.build<AndOp>({c.build<GeOp>({iy, scalar(0)}), c.build<LeOp>({iy, scalar(h - 1)})})});
      Value linear = c.build<AddOp>({c.build<MulOp>({clampTo(iy, h), scalar(w)}), clampTo(ix, w)});
      Value index = c.build<CastOp>(linear, {c.named("to", TypeAttr::get(c.builder.getI64Type()))});
      index = index ? c.build<BroadcastOp>(c.reshape(index, {n, 1, oh * ow}),
                                           {c.named("shape", c.ints({n, channels, oh * ow}))})
                    : index;
      Value picked = c.build<GatherElementsOp>({image, index}, {c.named("axis", c.builder.getI64IntegerAttr(2))});
      Value mask = c.build<CastOp>(inside, {c.named("to", TypeAttr::get(c.type(x).getElementType()))});
      Value factor = weight ? c.build<MulOp>({weight, mask}) : mask;
      return c.build<MulOp>({picked ? c.reshape(picked, {n, channels, oh, ow}) : picked,
                             factor ? c.reshape(factor, {n, 1, oh, ow}) : factor});
    };
    if (mode == "nearest")
      return c.finish(sample(c.build<RoundOp>(py), c.build<RoundOp>(px), Value()));
    Value x0 = c.build<FloorOp>(px), y0 = c.build<FloorOp>(py);
    Value x1 = c.build<AddOp>({x0, scalar(1)}), y1 = c.build<AddOp>({y0, scalar(1)});
    Value wx1 = c.build<SubOp>({px, x0}), wy1 = c.build<SubOp>({py, y0});
    Value wx0 = c.build<SubOp>({scalar(1), wx1}), wy0 = c.build<SubOp>({scalar(1), wy1});
    Value sum = c.build<AddOp>({c.build<AddOp>({sample(y0, x0, c.build<MulOp>({wy0, wx0})),
                                                sample(y0, x1, c.build<MulOp>({wy0, wx1}))}),
                                c.build<AddOp>({sample(y1, x0, c.build<MulOp>({wy1, wx0})),
                                                sample(y1, x1, c.build<MulOp>({wy1, wx1}))})});
    return c.finish(sum);
  };

  m["ConvTranspose"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), w = c.input(1), bias = c.input(2);
    ArrayRef<int64_t> xs = c.type(x).getShape(), ws = c.type(w).getShape();
    if (xs.size() != 4)
      return c.unsupportedBecause(std::to_string(xs.size() - 2) + "-D transposed convolution (only 2-D)");
    if (ws.size() != 4)
      return emitError(c.loc) << "takes a filter of rank 4, got rank " << ws.size();
    int64_t groups = c.attrInt("group", 1);
    int64_t cin = ws[0], coutPerGroup = ws[1], kh = ws[2], kw = ws[3];
    if (groups < 1 || groups > std::max<int64_t>(cin, 1) || cin % groups != 0 || xs[1] != cin)
      return emitError(c.loc) << "has a filter for " << cin << " input channels in " << groups
                              << " groups, for an input of " << xs[1] << " channels";
    auto read = [&](const char *name, SmallVector<int64_t> fallback) {
      auto v = c.attrInts(name);
      return v ? SmallVector<int64_t>(v->begin(), v->end()) : fallback;
    };
    SmallVector<int64_t> strides = read("strides", {1, 1}), dilations = read("dilations", {1, 1});
    SmallVector<int64_t> pads = read("pads", {0, 0, 0, 0}), outputPadding = read("output_padding", {0, 0});
    auto outputShape = c.attrInts("output_shape");
    // Window attributes within bounds keep every size computed below far
    // from overflow (the result's element count is checked when built).
    constexpr int64_t kMaxStep = int64_t(1) << 20, kMaxPad = int64_t(1) << 31;
    auto inRange = [](ArrayRef<int64_t> v, int64_t lo, int64_t hi) {
      return llvm::all_of(v, [&](int64_t x) { return x >= lo && x <= hi; });
    };
    if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4 ||
        outputPadding.size() != 2 || (outputShape && outputShape->size() < 2))
      return emitError(c.loc) << "takes 2 strides, dilations and output paddings, 4 pads and an "
                                 "output_shape of 2 or more values";
    if (!inRange(strides, 1, kMaxStep) || !inRange(dilations, 1, kMaxStep) ||
        !inRange(pads, -kMaxPad, kMaxPad) || !inRange(outputPadding, 0, kMaxPad) ||
        (outputShape && !inRange(*outputShape, 0, kMaxPad)))
      return emitError(c.loc) << "has strides or dilations outside [1, 2^20], or pads, output "
                                 "paddings or an output shape outside 2^31";
    std::string autoPad = c.attrString("auto_pad", "NOTSET");
    SmallVector<int64_t> kernel = {kh, kw};
    // Total padding from output_shape or auto_pad, split as ONNX says.
    if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      for (int64_t d = 0; d < 2; ++d) {
        int64_t target = outputShape ? (*outputShape)[outputShape->size() - 2 + d] : xs[2 + d] * strides[d];
        int64_t total = strides[d] * (xs[2 + d] - 1) + outputPadding[d] + ((kernel[d] - 1) * dilations[d] + 1) - target;
        // A negative total (output_shape larger than the stride alone
        // gives) becomes negative pads: extra output at the end.
        bool lower = autoPad == "SAME_LOWER";
        pads[d] = lower ? total - total / 2 : total / 2;
        pads[d + 2] = total - pads[d];
      }
    }
    // Insert stride - 1 zeros between input elements.
    Value up = x;
    int64_t h = xs[2], wd = xs[3];
    if (strides[0] > 1 || strides[1] > 1) {
      up = c.reshape(x, {xs[0], xs[1], h, 1, wd, 1});
      up = c.build<PadOp>(up, {c.named("low", c.ints({0, 0, 0, 0, 0, 0})),
                               c.named("high", c.ints({0, 0, 0, strides[0] - 1, 0, strides[1] - 1}))});
      up = c.reshape(up, {xs[0], xs[1], h * strides[0], wd * strides[1]});
      int64_t uh = (h - 1) * strides[0] + 1, uw = (wd - 1) * strides[1] + 1;
      up = c.build<SliceOp>(up, {c.named("starts", c.ints({0, 0, 0, 0})),
                                 c.named("ends", c.ints({xs[0], xs[1], uh, uw})),
                                 c.named("steps", c.ints({1, 1, 1, 1}))});
    }
    // Full padding, less the requested pads, plus output_padding at the end.
    SmallVector<int64_t> low(4, 0), high(4, 0);
    SmallVector<int64_t> cropLow(4, 0), cropHigh(4, 0);
    for (int64_t d = 0; d < 2; ++d) {
      int64_t full = (kernel[d] - 1) * dilations[d];
      int64_t begin = full - pads[d], end = full - pads[d + 2] + outputPadding[d];
      if (begin >= 0) low[2 + d] = begin; else cropLow[2 + d] = -begin;
      if (end >= 0) high[2 + d] = end; else cropHigh[2 + d] = -end;
    }
    up = c.build<PadOp>(up, {c.named("low", c.ints(low)), c.named("high", c.ints(high))});
    if (up && llvm::any_of(llvm::concat<int64_t>(cropLow, cropHigh), [](int64_t v) { return v > 0; })) {
      ArrayRef<int64_t> us = c.type(up).getShape();
      SmallVector<int64_t> ends(us);
      for (int64_t d = 0; d < 4; ++d)
        ends[d] -= cropHigh[d];
      up = c.build<SliceOp>(up, {c.named("starts", c.ints(cropLow)), c.named("ends", c.ints(ends)),
                                 c.named("steps", c.ints({1, 1, 1, 1}))});
    }
    // Filter [Cin, Cout/g, kh, kw] -> [Cout, Cin/g, kh, kw], flipped.
    Value f = c.reshape(w, {groups, cin / groups, coutPerGroup, kh, kw});
    f = c.build<TransposeOp>(f, {c.named("perm", c.ints({0, 2, 1, 3, 4}))});
    f = c.reshape(f, {groups * coutPerGroup, cin / groups, kh, kw});
    f = c.build<SliceOp>(f, {c.named("starts", c.ints({0, 0, kh - 1, kw - 1})),
                             c.named("ends", c.ints({groups * coutPerGroup, cin / groups, -1, -1})),
                             c.named("steps", c.ints({1, 1, -1, -1}))});
    SmallVector<Value> operands = {up, f};
    if (bias)
      operands.push_back(bias);
    return c.finish(c.build<Conv2dOp>(operands, {c.named("dilations", c.ints(dilations)),
                                                  c.named("groups", c.builder.getI64IntegerAttr(groups))}));
  };
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
