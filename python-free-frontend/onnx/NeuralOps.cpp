//===- NeuralOps.cpp - ONNX contractions, convolutions, pools, norms ------===//

#include "OnnxContext.h"

#include "kiln/Reference/Tensor.h"

#include <numeric>
#include <type_traits>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {
namespace onnx_import {

namespace {

/// Window attributes of Conv and the pools, normalised to 2-D: a 1-D op
/// works on [N, C, 1, L]. Fills padding as [top, left, bottom, right].
struct Window {
  bool oneDimensional = false;
  SmallVector<int64_t> kernel, strides, dilations, padding;
};

/// 3-D windows are unrolled over depth: one 2-D op per output plane and
/// tap. Their depth attributes are bounded first, so that neither the
/// unrolled loops nor their index arithmetic can run away.
bool depthWindowInRange(int64_t taps, int64_t stride, int64_t dilation, ArrayRef<int64_t> pads) {
  constexpr int64_t kLimit = int64_t(1) << 31;
  for (int64_t v : {taps, stride, dilation})
    if (v < 1 || v > kLimit)
      return false;
  return llvm::all_of(pads, [](int64_t p) { return p >= 0 && p <= kLimit; });
}

FailureOr<Window> window(NodeContext &c, Value x, ArrayRef<int64_t> kernel) {
  if (!x)
    return failure();
  Window w;
  int64_t spatial = c.rank(x) - 2;
  if (spatial != 1 && spatial != 2)
    return c.unsupportedBecause(std::to_string(spatial) + "-D windows (only 1-D and 2-D)");
  w.oneDimensional = spatial == 1;
  auto read = [&](const char *name, int64_t fallback) {
    auto v = c.attrInts(name);
    return v ? SmallVector<int64_t>(v->begin(), v->end()) : SmallVector<int64_t>(spatial, fallback);
  };
  SmallVector<int64_t> strides = read("strides", 1), dilations = read("dilations", 1);
  SmallVector<int64_t> pads(2 * spatial, 0);
  if (auto p = c.attrInts("pads"))
    pads.assign(p->begin(), p->end());
  if (pads.size() != static_cast<size_t>(2 * spatial) || strides.size() != static_cast<size_t>(spatial) ||
      dilations.size() != static_cast<size_t>(spatial) || kernel.size() != static_cast<size_t>(spatial)) {
    emitError(c.loc) << "window attributes do not match the input's rank";
    return failure();
  }
  // SAME padding divides by the strides; bounded values keep its
  // arithmetic in range (the ops' own checks come later).
  for (int64_t d = 0; d < spatial; ++d)
    for (int64_t v : {strides[d], dilations[d], kernel[d]})
      if (v < 1 || v > (int64_t(1) << 31)) {
        emitError(c.loc) << "window sizes, strides and dilations must be in [1, 2^31], got " << v;
        return failure();
      }
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  ArrayRef<int64_t> in = c.type(x).getShape().drop_front(2);
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t out = (in[d] + strides[d] - 1) / strides[d];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in[d]);
      int64_t small = total / 2, large = total - small;
      pads[d] = autoPad == "SAME_UPPER" ? small : large;
      pads[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (autoPad != "NOTSET") {
    emitError(c.loc) << "unknown auto_pad '" << autoPad << "'";
    return failure();
  }
  if (w.oneDimensional) {
    w.kernel = {1, kernel[0]};
    w.strides = {1, strides[0]};
    w.dilations = {1, dilations[0]};
    w.padding = {0, pads[0], 0, pads[1]};
  } else {
    w.kernel.assign(kernel.begin(), kernel.end());
    w.strides = strides;
    w.dilations = dilations;
    w.padding = pads;
  }
  return w;
}

/// [N, C, L] -> [N, C, 1, L] for 1-D windows.
Value to2d(NodeContext &c, Value v) {
  if (!v)
    return Value();
  ArrayRef<int64_t> s = c.type(v).getShape();
  return c.reshape(v, {s[0], s[1], 1, s[2]});
}
Value from2d(NodeContext &c, Value v) {
  if (!v)
    return v;
  ArrayRef<int64_t> s = c.type(v).getShape();
  return c.reshape(v, {s[0], s[1], s[3]});
}

/// A 3-D pool from 2-D pools of depth slices: the maximum over the depth
/// taps, or the mean (each 2-D average already divides by its own count;
/// the depth divides by the taps that count: inside the input, or inside
/// the padding too with count_include_pad).
template <typename OpT>
LogicalResult pool3d(NodeContext &c, Value x, ArrayRef<int64_t> kernel) {
  if (!x)
    return failure();
  constexpr bool isMax = std::is_same_v<OpT, MaxPool2dOp>;
  ArrayRef<int64_t> xs = c.type(x).getShape();
  auto read = [&](const char *name, SmallVector<int64_t> fallback) {
    auto v = c.attrInts(name);
    return v ? SmallVector<int64_t>(v->begin(), v->end()) : fallback;
  };
  SmallVector<int64_t> strides = read("strides", {1, 1, 1}), pads = read("pads", {0, 0, 0, 0, 0, 0});
  SmallVector<int64_t> dilations = read("dilations", {1, 1, 1});
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  if ((autoPad != "NOTSET" && autoPad != "VALID") || c.attrInt("ceil_mode", 0) != 0 ||
      strides.size() != 3 || pads.size() != 6 || dilations.size() != 3 || kernel.size() != 3)
    return c.unsupportedBecause("3-D pooling with auto_pad, ceil_mode or malformed attributes");
  if (autoPad == "VALID")
    pads.assign(6, 0);
  bool includePad = c.attrInt("count_include_pad", 0) != 0;
  if (!depthWindowInRange(kernel[0], strides[0], dilations[0], pads))
    return c.unsupportedBecause("3-D pooling window, strides, dilations or pads out of range");
  int64_t depth = xs[2];
  int64_t outDepth = ::kiln::ref::windowOutputSize(depth, pads[0], pads[3], kernel[0], strides[0],
                                                   dilations[0], false);
  if (outDepth < 1 || outDepth > 4096 || kernel[0] > 4096 || outDepth * kernel[0] > 4096)
    return c.unsupportedBecause("3-D pooling of this size");
  SmallVector<NamedAttribute> attrs = {
      c.named("kernel", c.ints({kernel[1], kernel[2]})), c.named("strides", c.ints({strides[1], strides[2]})),
      c.named("padding", c.ints({pads[1], pads[2], pads[4], pads[5]})),
      c.named("dilations", c.ints({dilations[1], dilations[2]})),
      c.named("count_include_pad", c.builder.getBoolAttr(includePad))};
  SmallVector<Value> planes;
  for (int64_t od = 0; od < outDepth; ++od) {
    Value acc;
    int64_t counted = 0;
    for (int64_t t = 0; t < kernel[0]; ++t) {
      int64_t id = od * strides[0] - pads[0] + t * dilations[0];
      if (id >= depth + pads[3])
        break;
      if (includePad)
        ++counted;
      if (id < 0 || id >= depth)
        continue;
      if (!includePad)
        ++counted;
      SmallVector<int64_t> starts(5, 0), ends(xs), steps(5, 1);
      starts[2] = id;
      ends[2] = id + 1;
      Value slice = c.build<SliceOp>(x, {c.named("starts", c.ints(starts)), c.named("ends", c.ints(ends)),
                                         c.named("steps", c.ints(steps))});
      Value pooled = c.build<OpT>(c.reshape(slice, {xs[0], xs[1], xs[3], xs[4]}), attrs);
      acc = !acc ? pooled : isMax ? c.build<MaxOp>({acc, pooled}) : c.build<AddOp>({acc, pooled});
    }
    if (!acc)
      return c.unsupportedBecause("output planes made only of padding");
    if (!isMax)
      acc = c.build<DivOp>({acc, c.scalarLike(acc, counted)});
    if (!acc)
      return failure();
    ArrayRef<int64_t> ps = c.type(acc).getShape();
    planes.push_back(c.reshape(acc, {ps[0], ps[1], 1, ps[2], ps[3]}));
  }
  return c.finish(planes.size() == 1 ? planes[0]
                                     : c.build<ConcatOp>(planes, {c.named("axis", c.builder.getI64IntegerAttr(2))}));
}

template <typename OpT>
LogicalResult pool(NodeContext &c) {
  Value x = c.input(0);
  auto kernel = c.attrInts("kernel_shape");
  if (!kernel)
    return c.unsupportedBecause("no kernel_shape");
  if (c.rank(x) == 5) {
    if (c.attrInt("storage_order", 0) != 0)
      return c.unsupportedBecause("column-major storage_order");
    return pool3d<OpT>(c, x, *kernel);
  }
  if (c.attrInt("storage_order", 0) != 0)
    return c.unsupportedBecause("column-major storage_order");
  FailureOr<Window> w = window(c, x, *kernel);
  if (failed(w))
    return failure();
  Value input = w->oneDimensional ? to2d(c, x) : x;
  SmallVector<NamedAttribute> attrs = {
      c.named("kernel", c.ints(w->kernel)), c.named("strides", c.ints(w->strides)),
      c.named("padding", c.ints(w->padding)), c.named("dilations", c.ints(w->dilations)),
      c.named("ceil_mode", c.builder.getBoolAttr(c.attrInt("ceil_mode", 0) != 0)),
      c.named("count_include_pad", c.builder.getBoolAttr(c.attrInt("count_include_pad", 0) != 0))};
  Value y = c.build<OpT>(input, attrs);
  return c.finish(w->oneDimensional ? from2d(c, y) : y);
}

/// Softmax before opset 13 flattens to 2-D at `axis`.
template <typename OpT>
LogicalResult softmax(NodeContext &c) {
  Value x = c.input(0);
  int64_t rank = c.rank(x);
  FailureOr<int64_t> axis = c.axis(c.attrInt("axis", c.opset < 13 ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  if (c.opset >= 13 || *axis == rank - 1)
    return c.finish(c.build<OpT>(x, {c.named("axis", c.builder.getI64IntegerAttr(*axis))}));
  if (hasSymbolicSizes(x.getType()))
    return c.unsupportedBecause("coerces a tensor with dynamic dimensions to 2-D (opset < 13)");
  ArrayRef<int64_t> s = c.type(x).getShape();
  int64_t outer = std::accumulate(s.begin(), s.begin() + *axis, int64_t(1), std::multiplies<>());
  int64_t inner = std::accumulate(s.begin() + *axis, s.end(), int64_t(1), std::multiplies<>());
  Value flat = c.reshape(x, {outer, inner});
  Value y = c.build<OpT>(flat, {c.named("axis", c.builder.getI64IntegerAttr(1))});
  return c.finish(y ? c.reshape(y, s) : Value());
}

/// A 3-D convolution as a sum over the filter's depth taps of 2-D
/// convolutions of input depth slices, one output depth at a time.
LogicalResult conv3d(NodeContext &c, Value x, Value w, Value bias) {
  if (!x || !w)
    return failure();
  ArrayRef<int64_t> xs = c.type(x).getShape(), ws = c.type(w).getShape();
  if (ws.size() != 5)
    return emitError(c.loc) << "a 3-D convolution takes a filter of rank 5, got rank " << ws.size();
  auto read = [&](const char *name, SmallVector<int64_t> fallback) {
    auto v = c.attrInts(name);
    return v ? SmallVector<int64_t>(v->begin(), v->end()) : fallback;
  };
  SmallVector<int64_t> strides = read("strides", {1, 1, 1}), dilations = read("dilations", {1, 1, 1});
  SmallVector<int64_t> pads = read("pads", {0, 0, 0, 0, 0, 0});
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID")
    return c.unsupportedBecause("3-D convolution with auto_pad " + autoPad);
  if (autoPad == "VALID")
    pads.assign(6, 0);
  if (strides.size() != 3 || dilations.size() != 3 || pads.size() != 6) {
    emitError(c.loc) << "window attributes do not match the input's rank";
    return failure();
  }
  int64_t groups = c.attrInt("group", 1);
  int64_t depth = xs[2], taps = ws[2];
  if (!depthWindowInRange(taps, strides[0], dilations[0], pads))
    return c.unsupportedBecause("3-D convolution window, strides, dilations or pads out of range");
  int64_t outDepth = ::kiln::ref::windowOutputSize(depth, pads[0], pads[3], taps, strides[0], dilations[0], false);
  if (outDepth < 1 || outDepth > 4096 || taps > 4096 || outDepth * taps > 4096)
    return c.unsupportedBecause("3-D convolution of this size");
  auto sliceAt = [&](Value v, int64_t k, ArrayRef<int64_t> shape4) {
    ArrayRef<int64_t> s = c.type(v).getShape();
    SmallVector<int64_t> starts(5, 0), ends(s), steps(5, 1);
    starts[2] = k;
    ends[2] = k + 1;
    Value slice = c.build<SliceOp>(v, {c.named("starts", c.ints(starts)), c.named("ends", c.ints(ends)),
                                       c.named("steps", c.ints(steps))});
    return slice ? c.reshape(slice, shape4) : slice;
  };
  SmallVector<NamedAttribute> attrs = {
      c.named("strides", c.ints({strides[1], strides[2]})),
      c.named("padding", c.ints({pads[1], pads[2], pads[4], pads[5]})),
      c.named("dilations", c.ints({dilations[1], dilations[2]})),
      c.named("groups", c.builder.getI64IntegerAttr(groups))};
  SmallVector<Value> planes;
  for (int64_t od = 0; od < outDepth; ++od) {
    Value sum;
    for (int64_t t = 0; t < taps; ++t) {
      int64_t id = od * strides[0] - pads[0] + t * dilations[0];
      if (id < 0 || id >= depth)
        continue;
      Value term = c.build<Conv2dOp>({sliceAt(x, id, {xs[0], xs[1], xs[3], xs[4]}),
                                      sliceAt(w, t, {ws[0], ws[1], ws[3], ws[4]})}, attrs);
      sum = sum ? c.build<AddOp>({sum, term}) : term;
    }
    if (!sum) // every tap falls in the padding: a zero plane
      return c.unsupportedBecause("output planes made only of padding");
    if (bias)
      sum = c.build<AddOp>({sum, c.reshape(bias, {1, ws[0], 1, 1})});
    if (!sum)
      return failure();
    ArrayRef<int64_t> ps = c.type(sum).getShape();
    planes.push_back(c.reshape(sum, {ps[0], ps[1], 1, ps[2], ps[3]}));
  }
  Value y = planes.size() == 1 ? planes[0]
                               : c.build<ConcatOp>(planes, {c.named("axis", c.builder.getI64IntegerAttr(2))});
  return c.finish(y);
}

Value castTo(NodeContext &c, Value v, Type to) {
  if (!v || c.type(v).getElementType() == to)
    return v;
  return c.build<CastOp>(v, {c.named("to", TypeAttr::get(to))});
}

/// A per-axis (1-D) quantization parameter reshaped to broadcast along
/// `axis` of a tensor of rank `rank`; scalars are left alone.
Value alongAxis(NodeContext &c, Value p, int64_t axis, int64_t rank) {
  if (!p || c.rank(p) == 0 || c.type(p).getNumElements() == 1)
    return p && c.rank(p) != 0 ? c.reshape(p, {}) : p;
  if (axis >= rank) { // a scalar tensor has no axis to quantize along
    emitError(c.loc) << "a quantization parameter of " << c.type(p).getNumElements()
                     << " values needs axis " << axis << " of a rank-" << rank << " tensor";
    return Value();
  }
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = c.type(p).getNumElements();
  return c.reshape(p, shape);
}

/// The axis of per-axis quantization parameters; any for scalar ones.
FailureOr<int64_t> quantizationAxis(NodeContext &c, Value x, Value scale) {
  if (!x)
    return failure();
  if (!scale || c.type(scale).getNumElements() <= 1)
    return int64_t(0);
  return c.axis(c.attrInt("axis", 1), c.rank(x));
}

/// round(real) + zero point, saturated to `to`'s range, in type `to`.
Value requantize(NodeContext &c, Value real, Value zeroPoint, Type to) {
  if (!real)
    return Value(); // the division failed and said why
  Value q = c.build<RoundOp>(real);
  if (zeroPoint)
    q = c.build<AddOp>({q, castTo(c, zeroPoint, c.type(real).getElementType())});
  double lo = 0, hi = 255;
  if (to.isSignlessInteger(8))
    lo = -128, hi = 127;
  else if (to.isSignlessInteger(32))
    lo = -2147483648.0, hi = 2147483647.0;
  q = c.build<MinOp>({c.build<MaxOp>({q, c.scalarLike(real, lo)}), c.scalarLike(real, hi)});
  return castTo(c, q, to);
}

/// (x - zero point) in i32, for the integer convolutions and matmuls.
Value centred(NodeContext &c, Value x, Value zeroPoint, int64_t axis = -1) {
  if (!x)
    return Value();
  Type i32 = c.builder.getI32Type();
  Value v = castTo(c, x, i32);
  if (!zeroPoint)
    return v;
  Value zp = castTo(c, zeroPoint, i32);
  if (axis >= 0)
    zp = alongAxis(c, zp, axis, c.rank(x));
  return c.build<SubOp>({v, zp});
}

/// Builds the 2-D (or 1-D) convolution of `x` and `w` with the node's
/// window attributes.
Value convolve(NodeContext &c, Value x, Value w, Value bias) {
  if (!x || !w)
    return Value();
  ArrayRef<int64_t> ws = c.type(w).getShape();
  if (ws.size() < 3 || static_cast<int64_t>(ws.size()) != c.rank(x)) {
    (void)c.unsupportedBecause("a filter of rank " + std::to_string(ws.size()) +
                               " for an input of rank " + std::to_string(c.rank(x)));
    return Value();
  }
  SmallVector<int64_t> kernel(ws.drop_front(2));
  FailureOr<Window> win = window(c, x, kernel);
  if (failed(win))
    return Value();
  if (win->oneDimensional) {
    x = to2d(c, x);
    w = c.reshape(w, {ws[0], ws[1], 1, ws[2]});
  }
  SmallVector<Value> operands = {x, w};
  if (bias)
    operands.push_back(bias);
  Value y = c.build<Conv2dOp>(operands, {c.named("strides", c.ints(win->strides)),
                                         c.named("padding", c.ints(win->padding)),
                                         c.named("dilations", c.ints(win->dilations)),
                                         c.named("groups", c.builder.getI64IntegerAttr(c.attrInt("group", 1)))});
  return win->oneDimensional ? from2d(c, y) : y;
}

} // namespace

void registerNeuralConverters(ConverterMap &m) {
  // Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
  // and the integer and quantized-linear convolutions and matmuls, computed
  // in f32 and i32.
  m["QuantizeLinear"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), zp = c.input(2);
    if (c.attrInt("block_size", 0) != 0 || c.attrInt("output_dtype", 0) != 0)
      return c.unsupportedBecause("blocked quantization or output_dtype (opset 21)");
    FailureOr<int64_t> axis = quantizationAxis(c, x, c.input(1));
    if (failed(axis))
      return failure();
    Type to = zp ? c.type(zp).getElementType() : IntegerType::get(c.builder.getContext(), 8, IntegerType::Unsigned);
    Value real = c.build<DivOp>({castTo(c, x, c.builder.getF32Type()),
                                 alongAxis(c, castTo(c, c.input(1), c.builder.getF32Type()), *axis, c.rank(x))});
    Value zeroPoint = alongAxis(c, zp, *axis, c.rank(x));
    if (zp && !zeroPoint)
      return failure(); // alongAxis said why; no zero point is not the same
    return c.finish(requantize(c, real, zeroPoint, to));
  };
  m["DequantizeLinear"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), zp = c.input(2);
    if (c.attrInt("block_size", 0) != 0)
      return c.unsupportedBecause("blocked quantization (opset 21)");
    FailureOr<int64_t> axis = quantizationAxis(c, x, c.input(1));
    if (failed(axis))
      return failure();
    Type f32 = c.builder.getF32Type();
    Value v = castTo(c, x, f32);
    if (zp)
      v = c.build<SubOp>({v, alongAxis(c, castTo(c, zp, f32), *axis, c.rank(x))});
    return c.finish(c.build<MulOp>({v, alongAxis(c, castTo(c, c.input(1), f32), *axis, c.rank(x))}));
  };
  m["DynamicQuantizeLinear"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0);
    SmallVector<int64_t> all;
    for (int64_t d = 0; d < c.rank(x); ++d)
      all.push_back(d);
    Value zero = c.scalarLike(x, 0);
    Value lo = c.build<MinOp>({c.build<ReduceMinOp>(x, {c.named("axes", c.ints(all))}), zero});
    Value hi = c.build<MaxOp>({c.build<ReduceMaxOp>(x, {c.named("axes", c.ints(all))}), zero});
    Value scale = c.build<DivOp>({c.build<SubOp>({hi, lo}), c.scalarLike(x, 255)});
    Type u8 = IntegerType::get(c.builder.getContext(), 8, IntegerType::Unsigned);
    Value zp = requantize(c, c.build<SubOp>({zero, c.build<DivOp>({lo, scale})}), Value(), u8);
    Value y = requantize(c, c.build<DivOp>({x, scale}), zp, u8);
    if (failed(c.finish(y)) || failed(c.finish(scale)))
      return failure();
    return c.finish(zp);
  };
  m["ConvInteger"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(convolve(c, centred(c, c.input(0), c.input(2)), centred(c, c.input(1), c.input(3), 0), Value()));
  };
  m["MatMulInteger"] = [](NodeContext &c) -> LogicalResult {
    Value a = centred(c, c.input(0), c.input(2)), b = centred(c, c.input(1), c.input(3));
    return c.finish(c.build<MatMulOp>({a, b}));
  };
  m["QLinearMatMul"] = [](NodeContext &c) -> LogicalResult {
    Type f32 = c.builder.getF32Type();
    Value product = c.build<MatMulOp>({centred(c, c.input(0), c.input(2)), centred(c, c.input(3), c.input(5))});
    Value factor = c.build<DivOp>({c.build<MulOp>({castTo(c, c.input(1), f32), castTo(c, c.input(4), f32)}),
                                   castTo(c, c.input(6), f32)});
    Value real = c.build<MulOp>({castTo(c, product, f32), factor});
    return c.finish(requantize(c, real, c.input(7), c.type(c.input(7)).getElementType()));
  };
  m["QLinearConv"] = [](NodeContext &c) -> LogicalResult {
    Type f32 = c.builder.getF32Type();
    Value conv = convolve(c, centred(c, c.input(0), c.input(2)), centred(c, c.input(3), c.input(5), 0),
                          c.input(8) ? castTo(c, c.input(8), c.builder.getI32Type()) : Value());
    if (!conv)
      return failure();
    Value wScale = alongAxis(c, castTo(c, c.input(4), f32), 1, c.rank(conv));
    Value factor = c.build<DivOp>({c.build<MulOp>({castTo(c, c.input(1), f32), wScale}), castTo(c, c.input(6), f32)});
    Value real = c.build<MulOp>({castTo(c, conv, f32), factor});
    return c.finish(requantize(c, real, c.input(7), c.type(c.input(7)).getElementType()));
  };

  m["MatMul"] = [](NodeContext &c) -> LogicalResult {
    Value a = c.input(0), b = c.input(1);
    bool vecA = c.rank(a) == 1, vecB = c.rank(b) == 1;
    if (vecA)
      a = c.reshape(a, {1, c.type(a).getDimSize(0)});
    if (vecB)
      b = c.reshape(b, {c.type(b).getDimSize(0), 1});
    Value y = c.build<MatMulOp>({a, b});
    if (!y)
      return failure();
    if (vecA || vecB) {
      SmallVector<int64_t> shape(c.type(y).getShape());
      if (vecB)
        shape.erase(shape.end() - 1);
      if (vecA)
        shape.erase(shape.end() - (vecB ? 1 : 2));
      y = c.reshape(y, shape);
    }
    return c.finish(y);
  };
  m["Gemm"] = [](NodeContext &c) -> LogicalResult {
    Value a = c.input(0), b = c.input(1);
    Value y = c.build<MatMulOp>({a, b}, {c.named("transpose_a", c.builder.getBoolAttr(c.attrInt("transA", 0))),
                                         c.named("transpose_b", c.builder.getBoolAttr(c.attrInt("transB", 0)))});
    float alpha = c.attrFloat("alpha", 1.0f), beta = c.attrFloat("beta", 1.0f);
    if (y && alpha != 1.0f)
      y = c.build<MulOp>({y, c.scalarLike(y, alpha)});
    if (y && c.input(2) && beta != 0.0f) {
      Value bias = c.input(2);
      if (beta != 1.0f)
        bias = c.build<MulOp>({bias, c.scalarLike(bias, beta)});
      y = c.build<AddOp>({y, bias});
    }
    return c.finish(y);
  };
  m["Conv"] = [](NodeContext &c) -> LogicalResult {
    Value x = c.input(0), w = c.input(1), bias = c.input(2);
    if (c.rank(x) == 5)
      return conv3d(c, x, w, bias);
    return c.finish(convolve(c, x, w, bias));
  };
  m["MaxPool"] = [](NodeContext &c) { return pool<MaxPool2dOp>(c); };
  m["AveragePool"] = [](NodeContext &c) { return pool<AvgPool2dOp>(c); };
  m["GlobalAveragePool"] = [](NodeContext &c) -> LogicalResult {
    return c.finish(c.build<GlobalAvgPoolOp>(c.input(0)));
  };
  m["GlobalMaxPool"] = [](NodeContext &c) -> LogicalResult {
    SmallVector<int64_t> axes;
    for (int64_t d = 2; d < c.rank(c.input(0)); ++d)
      axes.push_back(d);
    return c.finish(c.build<ReduceMaxOp>(c.input(0), {c.named("axes", c.ints(axes)),
                                                       c.named("keepdims", c.builder.getBoolAttr(true))}));
  };
  m["BatchNormalization"] = [](NodeContext &c) -> LogicalResult {
    if (c.attrInt("training_mode", 0) != 0)
      return c.unsupportedBecause("training mode");
    if (c.opset < 9 && c.attrInt("spatial", 1) != 1)
      return c.unsupportedBecause("spatial=0");
    SmallVector<Value> operands(c.inputs.begin(), c.inputs.begin() + std::min<size_t>(5, c.numInputs()));
    return c.finish(c.build<BatchNormOp>(operands, {c.named("epsilon", c.builder.getF64FloatAttr(c.attrFloat("epsilon", 1e-5f)))}));
  };
  m["Softmax"] = [](NodeContext &c) { return softmax<SoftmaxOp>(c); };
  m["LogSoftmax"] = [](NodeContext &c) { return softmax<LogSoftmaxOp>(c); };
}

} // namespace onnx_import
} // namespace frontend
} // namespace kiln
