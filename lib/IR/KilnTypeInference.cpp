//===- KilnTypeInference.cpp - result types of kiln ops -------------------===//
//
// Shape, dtype, layout and device inference for every kiln op. These are
// also the ops' semantic checks: the verifier re-runs inference and compares
// with the stated result types, and the frontends call it before creating an
// op so that a bad model gets one error at the right location.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Reference/Tensor.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::kiln;
namespace ref = ::kiln::ref;

namespace {

using OptLoc = std::optional<Location>;

LogicalResult fail(OptLoc loc, const Twine &message) {
  return emitOptionalError(loc, message);
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// All `operands` (nulls skipped) must be kiln tensors on one device.
/// Returns the first operand's encoding.
FailureOr<TensorEncodingAttr> commonDevice(OptLoc loc, ValueRange operands) {
  TensorEncodingAttr first;
  int64_t firstIndex = 0;
  for (auto [index, value] : llvm::enumerate(operands)) {
    if (!value)
      continue;
    TensorEncodingAttr enc = getEncoding(value.getType());
    if (!enc)
      return fail(loc, "operand #" + Twine(index) +
                           " is not a kiln tensor: " + typeString(value.getType()));
    if (!first) {
      first = enc;
      firstIndex = index;
      continue;
    }
    if (enc.getDeviceKind() != first.getDeviceKind() ||
        enc.getDeviceOrdinal() != first.getDeviceOrdinal())
      return fail(loc, "operand #" + Twine(index) + " is on " +
                           enc.getDeviceString() + " but operand #" +
                           Twine(firstIndex) + " is on " +
                           first.getDeviceString() +
                           "; insert an explicit kiln.transfer");
  }
  if (!first)
    return fail(loc, "expected at least one tensor operand");
  return first;
}

RankedTensorType tensorType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

TensorEncodingAttr encodingWith(TensorEncodingAttr device,
                                ArrayRef<int64_t> dimOrder) {
  return TensorEncodingAttr::get(device.getContext(), dimOrder,
                                 device.getDeviceKind(),
                                 device.getDeviceOrdinal());
}

SmallVector<AffineExpr> sizesOf(Value v) { return getDimSizes(tensorType(v)); }

/// A result type of these (possibly symbolic) sizes on `device`'s device.
RankedTensorType typeWith(ArrayRef<AffineExpr> sizes, Type element,
                          TensorEncodingAttr device,
                          ArrayRef<int64_t> dimOrder = {}) {
  return getKilnTensorType(sizes, element, dimOrder, device);
}

/// Ops whose rules are still written for static shapes refuse dynamic
/// dimensions with a message instead of computing a wrong type.
LogicalResult rejectSymbolic(OptLoc loc, StringRef op, ValueRange operands) {
  for (Value v : operands)
    if (v && hasSymbolicSizes(v.getType()))
      return fail(loc, op + " does not take dynamic dimensions yet, got " +
                           typeString(v.getType()));
  return success();
}

LogicalResult checkAxis(OptLoc loc, int64_t axis, int64_t rank,
                        StringRef what = "axis") {
  if (axis < 0 || axis >= rank)
    return fail(loc, what + " " + Twine(axis) + " is out of range for rank " +
                         Twine(rank));
  return success();
}

/// GatherElements and ScatterElements index `data` element by element along
/// `axis`: the indices have the data's rank and fit it on every other
/// dimension.
LogicalResult checkElementIndices(OptLoc loc, StringRef op, RankedTensorType data,
                                  RankedTensorType indices, int64_t axis) {
  if (!indices.getElementType().isInteger(32) && !indices.getElementType().isInteger(64))
    return fail(loc, op + " indices must be i32 or i64");
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  if (indices.getRank() != data.getRank())
    return fail(loc, op + " indices must have the data's rank");
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && indices.getDimSize(d) > data.getDimSize(d))
      return fail(loc, op + " indices " + shapeString(indices.getShape()) +
                           " exceed the data " + shapeString(data.getShape()) +
                           " outside the axis");
  return success();
}

template <typename AttrT>
LogicalResult requireAttr(OptLoc loc, AttrT attr, StringRef name) {
  if (!attr)
    return fail(loc, "missing required attribute '" + name + "'");
  return success();
}

/// Broadcasting elementwise inference. `elementType` null keeps the operands'
/// element type (all must agree, except the i1 condition of select).
LogicalResult inferElementwise(OptLoc loc, ValueRange operands,
                               ValueRange sameTypeOperands, Type resultElement,
                               SmallVectorImpl<Type> &results) {
  FailureOr<TensorEncodingAttr> device = commonDevice(loc, operands);
  if (failed(device))
    return failure();
  Type element = tensorType(sameTypeOperands.front()).getElementType();
  for (Value v : sameTypeOperands)
    if (tensorType(v).getElementType() != element)
      return fail(loc, "operands have different element types: " +
                           typeString(element) + " and " +
                           typeString(tensorType(v).getElementType()) +
                           "; insert an explicit kiln.cast");
  SmallVector<AffineExpr> shape = sizesOf(operands.front());
  for (Value v : operands.drop_front()) {
    auto b = broadcastSizes(shape, sizesOf(v));
    if (!b)
      return fail(loc, "shapes " + sizesString(shape) + " and " +
                           sizesString(sizesOf(v)) +
                           " are not broadcast-compatible");
    shape = *b;
  }
  // Operands of the result's rank share one layout; lower-rank operands are
  // broadcast and must be row-major.
  std::optional<ArrayRef<int64_t>> order;
  for (Value v : operands) {
    TensorEncodingAttr enc = getEncoding(v.getType());
    if (tensorType(v).getRank() != static_cast<int64_t>(shape.size())) {
      if (!enc.isRowMajor())
        return fail(loc, "a broadcast operand must be row_major, got " +
                             enc.getLayoutString());
      continue;
    }
    if (!order) {
      order = enc.getDimOrder();
    } else if (*order != enc.getDimOrder()) {
      return fail(loc, "operands have different layouts; insert an explicit "
                       "kiln.relayout");
    }
  }
  results.push_back(typeWith(shape, resultElement ? resultElement : element,
                             *device, order ? *order : ArrayRef<int64_t>{}));
  return success();
}

LogicalResult inferUnary(OptLoc loc, Value input,
                         SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, input)))
    return failure();
  results.push_back(input.getType());
  return success();
}

bool isSupportedElementType(Type t) {
  return t.isF16() || t.isBF16() || t.isF32() || t.isF64() || t.isSignlessInteger(1) ||
         t.isSignlessInteger(8) || t.isSignlessInteger(16) || t.isSignlessInteger(32) ||
         t.isSignlessInteger(64) || t.isUnsignedInteger(8) || t.isUnsignedInteger(16) ||
         t.isUnsignedInteger(32) || t.isUnsignedInteger(64);
}

LogicalResult inferReduce(OptLoc loc, Value input, ArrayRef<int64_t> axes,
                          bool keepdims, Type resultElement,
                          SmallVectorImpl<Type> &results) {
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, input);
  if (failed(enc))
    return failure();
  RankedTensorType type = tensorType(input);
  int64_t rank = type.getRank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t axis : axes) {
    if (failed(checkAxis(loc, axis, rank)))
      return failure();
    if (reduced[axis])
      return fail(loc, "axis " + Twine(axis) + " is listed twice");
    reduced[axis] = true;
  }
  SmallVector<AffineExpr> sizes = getDimSizes(type), shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      shape.push_back(sizes[d]);
    else if (keepdims)
      shape.push_back(getAffineConstantExpr(1, type.getContext()));
  }
  ArrayRef<int64_t> order =
      keepdims ? enc->getDimOrder() : ArrayRef<int64_t>{};
  results.push_back(typeWith(
      shape, resultElement ? resultElement : type.getElementType(), *enc, order));
  return success();
}

/// A reduction over axes read at run time: its result's sizes are given
/// (`resultSizes`, one per input dimension) and validated per run.
LogicalResult inferReduceAtRunTime(OptLoc loc, Value input, ArrayRef<int64_t> axes,
                                   bool keepdims, std::optional<AffineMap> runTimeAxes,
                                   std::optional<AffineMap> resultSizes,
                                   SmallVectorImpl<Type> &results) {
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, input);
  if (failed(enc))
    return failure();
  RankedTensorType type = tensorType(input);
  if (!runTimeAxes || !resultSizes || !axes.empty() || !keepdims ||
      runTimeAxes->getNumDims() || resultSizes->getNumDims() ||
      resultSizes->getNumResults() != type.getRank())
    return fail(loc, "a reduction over axes read at run time takes empty `axes`, keepdims, "
                     "`run_time_axes` and `result_sizes` of the input's rank");
  results.push_back(typeWith(SmallVector<AffineExpr>(resultSizes->getResults()),
                             type.getElementType(), *enc, enc->getDimOrder()));
  return success();
}

LogicalResult checkWindowAttrs(OptLoc loc, ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> padding,
                               ArrayRef<int64_t> dilations) {
  if (strides.size() != 2 || llvm::any_of(strides, [](int64_t s) { return s < 1; }))
    return fail(loc, "strides must be two positive integers");
  if (padding.size() != 4 || llvm::any_of(padding, [](int64_t p) { return p < 0; }))
    return fail(loc, "padding must be four non-negative integers "
                     "[top, left, bottom, right]");
  if (dilations.size() != 2 ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }))
    return fail(loc, "dilations must be two positive integers");
  return success();
}

/// Dimensions `dims` of `type` must be static (the rest may be symbolic).
LogicalResult requireStaticDims(OptLoc loc, StringRef op, RankedTensorType type,
                                ArrayRef<int64_t> dims) {
  for (int64_t d : dims)
    if (d < type.getRank() && type.isDynamicDim(d))
      return fail(loc, op + " needs a static dimension " + Twine(d) + ", got " +
                           typeString(type));
  return success();
}

LogicalResult checkImageLayout(OptLoc loc, Value input) {
  RankedTensorType type = tensorType(input);
  if (type.getRank() != 4)
    return fail(loc, "expected a 4-D [N, C, H, W] input, got " +
                         typeString(type));
  TensorEncodingAttr enc = getEncoding(type);
  if (!enc.isRowMajor() && enc.getLayoutString() != "nhwc")
    return fail(loc, "image input must be laid out nchw or nhwc, got " +
                         enc.getLayoutString());
  return success();
}

LogicalResult inferPool(OptLoc loc, Value input, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
                        ArrayRef<int64_t> dilations, bool ceilMode,
                        SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, input)) || failed(checkImageLayout(loc, input)))
    return failure();
  if (kernel.size() != 2 || llvm::any_of(kernel, [](int64_t k) { return k < 1; }))
    return fail(loc, "kernel must be two positive integers");
  if (failed(checkWindowAttrs(loc, strides, padding, dilations)))
    return failure();
  RankedTensorType type = tensorType(input);
  if (failed(requireStaticDims(loc, "pooling", type, {1, 2, 3})))
    return failure();
  int64_t oh = ref::windowOutputSize(type.getDimSize(2), padding[0], padding[2],
                            kernel[0], strides[0], dilations[0], ceilMode);
  int64_t ow = ref::windowOutputSize(type.getDimSize(3), padding[1], padding[3],
                            kernel[1], strides[1], dilations[1], ceilMode);
  if (oh < 1 || ow < 1)
    return fail(loc, "pooling window does not fit the input " +
                         shapeString(type.getShape()));
  int64_t spanH = (kernel[0] - 1) * dilations[0] + 1, spanW = (kernel[1] - 1) * dilations[1] + 1;
  if (padding[0] >= spanH || padding[2] >= spanH || padding[1] >= spanW || padding[3] >= spanW)
    return fail(loc, "padding must be smaller than the window");
  MLIRContext *context = type.getContext();
  results.push_back(typeWith({getDimSizes(type)[0],
                              getAffineConstantExpr(type.getDimSize(1), context),
                              getAffineConstantExpr(oh, context),
                              getAffineConstantExpr(ow, context)},
                             type.getElementType(), getEncoding(type),
                             getEncoding(type).getDimOrder()));
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define KILN_UNARY_INFERENCE(OP)                                               \
  LogicalResult OP::inferReturnTypes(MLIRContext *, OptLoc loc,                \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &results) {         \
    return inferUnary(loc, adaptor.getInput(), results);                       \
  }
KILN_UNARY_INFERENCE(NegOp)
KILN_UNARY_INFERENCE(AbsOp)
KILN_UNARY_INFERENCE(ExpOp)
KILN_UNARY_INFERENCE(LogOp)
KILN_UNARY_INFERENCE(SqrtOp)
KILN_UNARY_INFERENCE(RsqrtOp)
KILN_UNARY_INFERENCE(TanhOp)
KILN_UNARY_INFERENCE(SigmoidOp)
KILN_UNARY_INFERENCE(ReluOp)
KILN_UNARY_INFERENCE(GeluOp)
KILN_UNARY_INFERENCE(ErfOp)
KILN_UNARY_INFERENCE(NotOp)
KILN_UNARY_INFERENCE(FloorOp)
KILN_UNARY_INFERENCE(CeilOp)
KILN_UNARY_INFERENCE(RoundOp)
KILN_UNARY_INFERENCE(SinOp)
KILN_UNARY_INFERENCE(CosOp)
KILN_UNARY_INFERENCE(TanOp)
KILN_UNARY_INFERENCE(AsinOp)
KILN_UNARY_INFERENCE(AcosOp)
KILN_UNARY_INFERENCE(AtanOp)
KILN_UNARY_INFERENCE(SinhOp)
KILN_UNARY_INFERENCE(CoshOp)
KILN_UNARY_INFERENCE(AsinhOp)
KILN_UNARY_INFERENCE(AcoshOp)
KILN_UNARY_INFERENCE(AtanhOp)
KILN_UNARY_INFERENCE(SignOp)
#undef KILN_UNARY_INFERENCE

#define KILN_SOFTMAX_INFERENCE(OP)                                             \
  LogicalResult OP::inferReturnTypes(MLIRContext *, OptLoc loc,                \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &results) {         \
    if (failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")) ||             \
        failed(checkAxis(loc, adaptor.getAxis(),                               \
                         tensorType(adaptor.getInput()).getRank())))           \
      return failure();                                                        \
    return inferUnary(loc, adaptor.getInput(), results);                       \
  }
KILN_SOFTMAX_INFERENCE(SoftmaxOp)
KILN_SOFTMAX_INFERENCE(LogSoftmaxOp)
#undef KILN_SOFTMAX_INFERENCE

#define KILN_BINARY_INFERENCE(OP, RESULT_ELEMENT)                              \
  LogicalResult OP::inferReturnTypes(MLIRContext *context, OptLoc loc,         \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &results) {         \
    SmallVector<Value, 2> operands{adaptor.getLhs(), adaptor.getRhs()};        \
    if (failed(commonDevice(loc, operands)))                                   \
      return failure();                                                        \
    return inferElementwise(loc, operands, operands, RESULT_ELEMENT, results); \
  }
KILN_BINARY_INFERENCE(AddOp, Type())
KILN_BINARY_INFERENCE(SubOp, Type())
KILN_BINARY_INFERENCE(MulOp, Type())
KILN_BINARY_INFERENCE(DivOp, Type())
KILN_BINARY_INFERENCE(PowOp, Type())
KILN_BINARY_INFERENCE(MaxOp, Type())
KILN_BINARY_INFERENCE(MinOp, Type())
KILN_BINARY_INFERENCE(AndOp, Type())
KILN_BINARY_INFERENCE(OrOp, Type())
KILN_BINARY_INFERENCE(ModOp, Type())
KILN_BINARY_INFERENCE(EqOp, IntegerType::get(context, 1))
KILN_BINARY_INFERENCE(NeOp, IntegerType::get(context, 1))
KILN_BINARY_INFERENCE(LtOp, IntegerType::get(context, 1))
KILN_BINARY_INFERENCE(LeOp, IntegerType::get(context, 1))
KILN_BINARY_INFERENCE(GtOp, IntegerType::get(context, 1))
KILN_BINARY_INFERENCE(GeOp, IntegerType::get(context, 1))
#undef KILN_BINARY_INFERENCE

LogicalResult SelectOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  SmallVector<Value, 3> operands{adaptor.getCond(), adaptor.getLhs(),
                                 adaptor.getRhs()};
  if (failed(commonDevice(loc, operands)))
    return failure();
  if (!tensorType(adaptor.getCond()).getElementType().isInteger(1))
    return fail(loc, "condition must be an i1 tensor");
  SmallVector<Value, 2> values{adaptor.getLhs(), adaptor.getRhs()};
  return inferElementwise(loc, operands, values, Type(), results);
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, adaptor.getInput())) ||
      failed(requireAttr(loc, adaptor.getToAttr(), "to")))
    return failure();
  Type to = adaptor.getTo();
  if (!isSupportedElementType(to))
    return fail(loc, "cannot cast to " + typeString(to) +
                         " (supported: f16, bf16, f32, f64, i1, i8, i16, i32, i64, u8, u16, u32, u64)");
  results.push_back(withElementType(tensorType(adaptor.getInput()), to));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// The target sizes of a reshape or broadcast: its `sizes` map when
/// symbolic, else its static `shape`.
static SmallVector<AffineExpr> targetSizes(MLIRContext *context,
                                           ArrayRef<int64_t> shape,
                                           std::optional<AffineMap> sizes) {
  if (sizes)
    return SmallVector<AffineExpr>(sizes->getResults());
  SmallVector<AffineExpr> out;
  for (int64_t d : shape)
    out.push_back(getAffineConstantExpr(d, context));
  return out;
}

static LogicalResult checkTargetMap(OptLoc loc, StringRef op,
                                    ArrayRef<int64_t> shape,
                                    std::optional<AffineMap> sizes) {
  if (!sizes)
    return success();
  if (!shape.empty() || sizes->getNumDims() != 0)
    return fail(loc, op + ": a symbolic target (sizes) takes an empty shape and "
                          "a map of symbols only");
  for (AffineExpr e : sizes->getResults())
    if (auto c = llvm::dyn_cast<AffineConstantExpr>(e); c && c.getValue() < 0)
      return fail(loc, op + ": invalid dimension " + Twine(c.getValue()));
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *context, OptLoc loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, adaptor.getInput())) ||
      failed(requireAttr(loc, adaptor.getShapeAttr(), "shape")) ||
      failed(checkTargetMap(loc, "reshape", adaptor.getShape(), adaptor.getSizes())))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  if (adaptor.getSizes() || hasSymbolicSizes(type)) {
    // Symbolic: element counts must agree as polynomials of the symbols.
    SmallVector<AffineExpr> target =
        targetSizes(context, adaptor.getShape(), adaptor.getSizes());
    AffineExpr total = productOf(getDimSizes(type), context);
    AffineExpr known = getAffineConstantExpr(1, context);
    int64_t inferred = -1;
    for (auto [i, d] : llvm::enumerate(target)) {
      auto c = llvm::dyn_cast<AffineConstantExpr>(d);
      if (c && c.getValue() == -1 && !adaptor.getSizes()) {
        if (inferred != -1)
          return fail(loc, "reshape: at most one dimension may be -1");
        inferred = i;
      } else if (c && c.getValue() < 0) {
        return fail(loc, "reshape: invalid dimension " + Twine(c.getValue()));
      } else {
        known = known * d;
      }
    }
    if (inferred != -1) {
      std::optional<AffineExpr> q = exactQuotient(total, known);
      if (!q)
        return fail(loc, "reshape: cannot infer -1 for " +
                             sizesString(getDimSizes(type)) + " into " +
                             sizesString(target));
      target[inferred] = *q;
    } else if (!equalSizes(total, known) &&
               // Only a target of symbols can be left to each run.
               !(adaptor.getCheckedAtRunTime() && !llvm::isa<AffineConstantExpr>(known))) {
      return fail(loc, "reshape: " + sizesString(getDimSizes(type)) + " and " +
                           sizesString(target) +
                           " do not have the same number of elements for every size");
    }
    results.push_back(typeWith(target, type.getElementType(), getEncoding(type)));
    return success();
  }
  SmallVector<int64_t> shape(adaptor.getShape());
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == -1) {
      if (inferred != -1)
        return fail(loc, "reshape: at most one dimension may be -1");
      inferred = i;
    } else if (d < 0) {
      return fail(loc, "reshape: invalid dimension " + Twine(d));
    } else if (__builtin_mul_overflow(known, d, &known)) {
      // More elements than any tensor holds, so more than the input's.
      return fail(loc, "reshape: " + shapeString(shape) + " has more elements than " +
                           shapeString(type.getShape()));
    }
  }
  int64_t total = type.getNumElements();
  if (inferred != -1) {
    if (known == 0 || total % known != 0)
      return fail(loc, "reshape: cannot infer -1 for " +
                           shapeString(type.getShape()) + " into " +
                           shapeString(shape));
    shape[inferred] = total / known;
    known = total;
  }
  if (known != total)
    return fail(loc, "reshape: " + shapeString(type.getShape()) + " has " +
                         Twine(total) + " elements but " + shapeString(shape) +
                         " has " + Twine(known));
  results.push_back(RankedTensorType::get(
      shape, type.getElementType(), encodingWith(getEncoding(type), {})));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, adaptor.getInput())) ||
      failed(requireAttr(loc, adaptor.getPermAttr(), "perm")))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (!isValidDimOrder(perm, type.getRank()) ||
      static_cast<int64_t>(perm.size()) != type.getRank())
    return fail(loc, "perm must be a permutation of 0.." +
                         Twine(type.getRank() - 1));
  SmallVector<AffineExpr> sizes = getDimSizes(type), shape;
  for (int64_t d : perm)
    shape.push_back(sizes[d]);
  results.push_back(typeWith(shape, type.getElementType(), getEncoding(type)));
  return success();
}

LogicalResult BroadcastOp::inferReturnTypes(MLIRContext *context, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, adaptor.getInput())) ||
      failed(requireAttr(loc, adaptor.getShapeAttr(), "shape")) ||
      failed(checkTargetMap(loc, "broadcast", adaptor.getShape(), adaptor.getSizes())))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  SmallVector<AffineExpr> target =
      targetSizes(context, adaptor.getShape(), adaptor.getSizes());
  auto b = broadcastSizes(getDimSizes(type), target);
  if (!b || *b != target)
    return fail(loc, "cannot broadcast " + sizesString(getDimSizes(type)) +
                         " to " + sizesString(target));
  results.push_back(typeWith(target, type.getElementType(), getEncoding(type)));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, adaptor.getInput())) ||
      failed(requireAttr(loc, adaptor.getStartsAttr(), "starts")) ||
      failed(requireAttr(loc, adaptor.getEndsAttr(), "ends")) ||
      failed(requireAttr(loc, adaptor.getStepsAttr(), "steps")))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  size_t rank = type.getRank();
  if (adaptor.getRunTimeBounds() || adaptor.getResultSizes()) {
    // Bounds read at run time: the result's sizes are given, validated
    // per run.
    std::optional<AffineMap> bounds = adaptor.getRunTimeBounds(),
                             sizes = adaptor.getResultSizes();
    if (!bounds || !sizes || !starts.empty() || !ends.empty() || !steps.empty() ||
        adaptor.getEndSizes() || bounds->getNumDims() || sizes->getNumDims() ||
        bounds->getNumResults() != 3 * rank || sizes->getNumResults() != rank)
      return fail(loc, "slice: bounds read at run time take empty starts, ends and steps, "
                       "`run_time_bounds` of 3 per dimension and `result_sizes` of one");
    results.push_back(typeWith(SmallVector<AffineExpr>(sizes->getResults()),
                               type.getElementType(), getEncoding(type),
                               getEncoding(type).getDimOrder()));
    return success();
  }
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return fail(loc, "slice: starts, ends and steps need one entry per "
                     "dimension (" + Twine(rank) + ")");
  std::optional<AffineMap> endSizes = adaptor.getEndSizes();
  if (endSizes && (endSizes->getNumDims() != 0 || endSizes->getNumResults() != rank))
    return fail(loc, "slice: end_sizes must map the size symbols to one end per dimension");
  SmallVector<AffineExpr> sizes = getDimSizes(type), shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = type.getDimSize(d), start = starts[d], end = ends[d],
            step = steps[d];
    if (step == 0)
      return fail(loc, "slice: step must not be 0");
    if (endSizes && !llvm::isa<AffineConstantExpr>(endSizes->getResult(d))) {
      // A symbolic end of a static dimension, from a static start.
      if (type.isDynamicDim(d) || step != 1 || start < 0 || start > dim)
        return fail(loc, "slice: a symbolic end takes a static dimension, a static start "
                         "and step 1");
      shape.push_back(endSizes->getResult(d) - start);
      continue;
    }
    if (endSizes)
      end = llvm::cast<AffineConstantExpr>(endSizes->getResult(d)).getValue();
    if (type.isDynamicDim(d)) {
      // A dynamic dimension is sliced forward from a static start, to its
      // end or to a static end (which the frontend keeps within the
      // dimension's least size).
      if (step < 0 || start < 0 || end < start)
        return fail(loc, "slice: dynamic dimension " + Twine(d) +
                             " can only be sliced forward from a static start");
      if (end == std::numeric_limits<int64_t>::max())
        shape.push_back((sizes[d] - start).ceilDiv(step));
      else
        shape.push_back(getAffineConstantExpr(ref::sliceExtent(start, end, step),
                                              type.getContext()));
      continue;
    }
    if (step > 0) {
      if (start < 0 || start > dim || end < 0 || end > dim)
        return fail(loc, "slice: dimension " + Twine(d) + " range [" +
                             Twine(start) + ", " + Twine(end) +
                             ") is outside [0, " + Twine(dim) + "]");
      shape.push_back(getAffineConstantExpr(ref::sliceExtent(start, end, step),
                                            type.getContext()));
    } else {
      if (start < 0 || start > dim - 1 || end < -1 || end > dim - 1)
        return fail(loc, "slice: dimension " + Twine(d) +
                             " reverse range is out of bounds");
      shape.push_back(getAffineConstantExpr(ref::sliceExtent(start, end, step),
                                            type.getContext()));
    }
  }
  results.push_back(typeWith(shape, type.getElementType(), getEncoding(type),
                             getEncoding(type).getDimOrder()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail(loc, "concat needs at least one input");
  if (failed(commonDevice(loc, inputs)) ||
      failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")))
    return failure();
  RankedTensorType first = tensorType(inputs.front());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, first.getRank())))
    return failure();
  SmallVector<AffineExpr> shape = getDimSizes(first);
  bool symbolic = hasSymbolicSizes(first);
  for (Value v : inputs)
    symbolic |= hasSymbolicSizes(v.getType());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    RankedTensorType t = tensorType(v);
    if (t.getElementType() != first.getElementType() ||
        t.getRank() != first.getRank() ||
        getEncoding(t).getDimOrder() != getEncoding(first).getDimOrder())
      return fail(loc, "concat input #" + Twine(i + 1) + " (" + typeString(t) +
                           ") does not match input #0 in element type, rank "
                           "or layout");
    SmallVector<AffineExpr> sizes = getDimSizes(t);
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == axis)
        continue;
      if (sizes[d] != shape[d])
        return fail(loc, "concat input #" + Twine(i + 1) +
                             " differs from input #0 in dimension " + Twine(d));
    }
    if (!symbolic) {
      int64_t joined;
      if (__builtin_add_overflow(llvm::cast<AffineConstantExpr>(shape[axis]).getValue(),
                                 t.getDimSize(axis), &joined))
        return fail(loc, "concat: the joined dimension overflows");
      shape[axis] = getAffineConstantExpr(joined, first.getContext());
    } else {
      shape[axis] = shape[axis] + sizes[axis];
    }
  }
  results.push_back(typeWith(shape, first.getElementType(), getEncoding(first),
                             getEncoding(first).getDimOrder()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, adaptor.getInput())) ||
      failed(requireAttr(loc, adaptor.getLowAttr(), "low")) ||
      failed(requireAttr(loc, adaptor.getHighAttr(), "high")))
    return failure();
  if (failed(rejectSymbolic(loc, "pad", adaptor.getInput())))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if (low.size() != static_cast<size_t>(type.getRank()) ||
      high.size() != low.size())
    return fail(loc, "pad: low and high need one entry per dimension (" +
                         Twine(type.getRank()) + ")");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (low[d] < 0 || high[d] < 0)
      return fail(loc, "pad: amounts must be non-negative");
    int64_t padded;
    if (__builtin_add_overflow(type.getDimSize(d), low[d], &padded) ||
        __builtin_add_overflow(padded, high[d], &padded))
      return fail(loc, "pad: dimension " + Twine(d) + " padded by " + Twine(low[d]) + " and " +
                           Twine(high[d]) + " overflows");
    shape.push_back(padded);
  }
  results.push_back(RankedTensorType::get(shape, type.getElementType(),
                                          type.getEncoding()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  SmallVector<Value, 2> operands{adaptor.getData(), adaptor.getIndices()};
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, operands);
  if (failed(enc) || failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")))
    return failure();
  RankedTensorType data = tensorType(adaptor.getData());
  RankedTensorType indices = tensorType(adaptor.getIndices());
  if (!indices.getElementType().isInteger(32) &&
      !indices.getElementType().isInteger(64))
    return fail(loc, "gather indices must be i32 or i64");
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  SmallVector<AffineExpr> dataSizes = getDimSizes(data);
  SmallVector<AffineExpr> shape(ArrayRef<AffineExpr>(dataSizes).take_front(axis));
  llvm::append_range(shape, getDimSizes(indices));
  llvm::append_range(shape, ArrayRef<AffineExpr>(dataSizes).drop_front(axis + 1));
  results.push_back(typeWith(shape, data.getElementType(), *enc));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &results) {
  SmallVector<Value, 2> operands{adaptor.getData(), adaptor.getIndices()};
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, operands);
  if (failed(enc) || failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")))
    return failure();
  RankedTensorType data = tensorType(adaptor.getData());
  RankedTensorType indices = tensorType(adaptor.getIndices());
  // Over static data, indices may have a symbolic size along the axis
  // (TopK's k read at run time): the other sizes are still checked.
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  bool symbolicAlongAxis = !hasSymbolicSizes(data) && hasSymbolicSizes(indices) && axis >= 0 &&
                           axis < indices.getRank();
  for (int64_t d = 0; d < indices.getRank() && symbolicAlongAxis; ++d)
    symbolicAlongAxis = d == axis || !indices.isDynamicDim(d);
  if ((!symbolicAlongAxis && failed(rejectSymbolic(loc, "gather_elements", operands))) ||
      failed(checkElementIndices(loc, "gather_elements", data, indices, adaptor.getAxis())))
    return failure();
  results.push_back(typeWith(getDimSizes(indices), data.getElementType(), *enc));
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &results) {
  SmallVector<Value, 3> operands{adaptor.getData(), adaptor.getIndices(), adaptor.getUpdates()};
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, operands);
  if (failed(enc) || failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")))
    return failure();
  RankedTensorType data = tensorType(adaptor.getData());
  RankedTensorType indices = tensorType(adaptor.getIndices());
  RankedTensorType updates = tensorType(adaptor.getUpdates());
  if (failed(rejectSymbolic(loc, "scatter_elements", operands)) ||
      failed(checkElementIndices(loc, "scatter_elements", data, indices, adaptor.getAxis())))
    return failure();
  if (updates.getShape() != indices.getShape())
    return fail(loc, "scatter_elements updates must have the indices' shape");
  if (updates.getElementType() != data.getElementType())
    return fail(loc, "scatter_elements updates must have the data's element type");
  StringRef reduction = adaptor.getReduction();
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return fail(loc, "scatter_elements reduction must be none, add or mul");
  results.push_back(RankedTensorType::get(data.getShape(), data.getElementType(),
                                          encodingWith(*enc, {})));
  return success();
}

LogicalResult ArgSortOp::inferReturnTypes(MLIRContext *context, OptLoc loc, Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, adaptor.getInput());
  if (failed(enc) || failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  if (failed(checkAxis(loc, adaptor.getAxis(), type.getRank())) ||
      failed(requireStaticDims(loc, "argsort", type, {static_cast<int64_t>(adaptor.getAxis())})))
    return failure();
  results.push_back(typeWith(getDimSizes(type), IntegerType::get(context, 64), *enc));
  return success();
}

LogicalResult TakePrefixOp::inferReturnTypes(MLIRContext *, OptLoc loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, {adaptor.getInput(), adaptor.getCount()});
  if (failed(enc) || failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")) ||
      failed(requireAttr(loc, adaptor.getLengthAttr(), "length")))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput()),
                   count = tensorType(adaptor.getCount());
  if (failed(checkAxis(loc, adaptor.getAxis(), type.getRank())) ||
      failed(requireStaticDims(loc, "take_prefix", type,
                               {static_cast<int64_t>(adaptor.getAxis())})))
    return failure();
  if (count.getRank() != 0 || !count.getElementType().isSignlessInteger(64))
    return fail(loc, "take_prefix: the count must be an i64 scalar");
  AffineMap length = adaptor.getLength();
  if (length.getNumDims() || length.getNumResults() != 1 ||
      !llvm::isa<AffineSymbolExpr>(length.getResult(0)))
    return fail(loc, "take_prefix: `length` must map the size symbols to one of them");
  SmallVector<AffineExpr> sizes = getDimSizes(type);
  sizes[adaptor.getAxis()] = length.getResult(0);
  results.push_back(typeWith(sizes, type.getElementType(), *enc));
  return success();
}

LogicalResult NonMaxSuppressionOp::inferReturnTypes(MLIRContext *context, OptLoc loc,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &results) {
  FailureOr<TensorEncodingAttr> enc =
      commonDevice(loc, {adaptor.getBoxes(), adaptor.getScores(), adaptor.getMaxOutput(),
                         adaptor.getIouThreshold(), adaptor.getScoreThreshold()});
  if (failed(enc))
    return failure();
  RankedTensorType boxes = tensorType(adaptor.getBoxes()), scores = tensorType(adaptor.getScores());
  auto scalar = [](RankedTensorType t, bool integer) {
    return t.getRank() == 0 &&
           (integer ? t.getElementType().isSignlessInteger(64) : t.getElementType().isF32());
  };
  if (!boxes.hasStaticShape() || !scores.hasStaticShape() || boxes.getRank() != 3 ||
      scores.getRank() != 3 || boxes.getDimSize(2) != 4 ||
      scores.getDimSize(0) != boxes.getDimSize(0) || scores.getDimSize(2) != boxes.getDimSize(1) ||
      !boxes.getElementType().isF32() || !scores.getElementType().isF32())
    return fail(loc, "non_max_suppression takes static f32 boxes [B, N, 4] and scores [B, C, N]");
  if (!scalar(tensorType(adaptor.getMaxOutput()), true) ||
      !scalar(tensorType(adaptor.getIouThreshold()), false) ||
      !scalar(tensorType(adaptor.getScoreThreshold()), false))
    return fail(loc, "non_max_suppression takes an i64 max_output and f32 thresholds, scalars");
  if (adaptor.getCenterPointBox() != 0 && adaptor.getCenterPointBox() != 1)
    return fail(loc, "non_max_suppression: center_point_box is 0 or 1");
  int64_t rows = scores.getNumElements();
  results.push_back(RankedTensorType::get({rows, 3}, IntegerType::get(context, 64),
                                          encodingWith(*enc, {})));
  return success();
}

LogicalResult TransferOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, adaptor.getInput())) ||
      failed(requireAttr(loc, adaptor.getToAttr(), "to")))
    return failure();
  auto device = parseDevice(adaptor.getTo());
  if (!device)
    return fail(loc, "unknown device '" + adaptor.getTo() +
                         "' (expected cpu or cuda:N)");
  RankedTensorType type = tensorType(adaptor.getInput());
  results.push_back(RankedTensorType::get(
      type.getShape(), type.getElementType(),
      getEncoding(type).withDevice(device->first, device->second)));
  return success();
}

LogicalResult RelayoutOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, adaptor.getInput());
  if (failed(enc))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  SmallVector<int64_t> order(adaptor.getDimOrder());
  if (!isValidDimOrder(order, type.getRank()))
    return fail(loc, "dim_order must be empty (row-major) or a permutation of "
                     "0.." + Twine(type.getRank() - 1));
  if (llvm::all_of(llvm::enumerate(order),
                   [](auto p) { return p.value() == int64_t(p.index()); }))
    order.clear();
  results.push_back(typeWith(getDimSizes(type), type.getElementType(), *enc,
                             order));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

#define KILN_REDUCE_INFERENCE(OP)                                              \
  LogicalResult OP::inferReturnTypes(MLIRContext *, OptLoc loc,                \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &results) {         \
    if (failed(requireAttr(loc, adaptor.getAxesAttr(), "axes")))               \
      return failure();                                                        \
    if (adaptor.getRunTimeAxes() || adaptor.getResultSizes())                  \
      return inferReduceAtRunTime(loc, adaptor.getInput(), adaptor.getAxes(),  \
                                  adaptor.getKeepdims(),                       \
                                  adaptor.getRunTimeAxes(),                    \
                                  adaptor.getResultSizes(), results);          \
    return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),             \
                       adaptor.getKeepdims(), Type(), results);                \
  }
KILN_REDUCE_INFERENCE(ReduceSumOp)
KILN_REDUCE_INFERENCE(ReduceMeanOp)
KILN_REDUCE_INFERENCE(ReduceMaxOp)
KILN_REDUCE_INFERENCE(ReduceMinOp)
KILN_REDUCE_INFERENCE(ReduceProdOp)
#undef KILN_REDUCE_INFERENCE

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *context, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")))
    return failure();
  int64_t axis = adaptor.getAxis();
  return inferReduce(loc, adaptor.getInput(), ArrayRef<int64_t>(axis),
                     adaptor.getKeepdims(), IntegerType::get(context, 64),
                     results);
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  SmallVector<Value, 5> operands{adaptor.getInput(), adaptor.getScale(),
                                 adaptor.getBias(), adaptor.getMean(),
                                 adaptor.getVariance()};
  if (failed(commonDevice(loc, operands)))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  if (type.getRank() < 2)
    return fail(loc, "batch_norm input must have rank >= 2 (N, C, ...)");
  if (failed(requireStaticDims(loc, "batch_norm", type, {1})))
    return failure();
  int64_t channels = type.getDimSize(1);
  static const char *names[] = {"input", "scale", "bias", "mean", "variance"};
  for (size_t i = 1; i < operands.size(); ++i) {
    RankedTensorType t = tensorType(operands[i]);
    if (t.getRank() != 1 || t.getDimSize(0) != channels ||
        t.getElementType() != type.getElementType())
      return fail(loc, Twine("batch_norm ") + names[i] + " must be [" +
                           Twine(channels) + "] of the input's element type, got " +
                           typeString(t));
  }
  results.push_back(type);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  SmallVector<Value, 3> operands{adaptor.getInput(), adaptor.getScale(),
                                 adaptor.getBias()};
  if (failed(commonDevice(loc, operands)) ||
      failed(requireAttr(loc, adaptor.getAxisAttr(), "axis")))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, type.getRank())))
    return failure();
  SmallVector<int64_t> normalizedDims;
  for (int64_t d = axis; d < type.getRank(); ++d)
    normalizedDims.push_back(d);
  if (failed(requireStaticDims(loc, "layer_norm", type, normalizedDims)))
    return failure();
  ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
  for (Value v : ValueRange(operands).drop_front()) {
    if (!v)
      continue;
    RankedTensorType t = tensorType(v);
    if (t.getShape() != normalized || t.getElementType() != type.getElementType())
      return fail(loc, "layer_norm scale and bias must have shape " +
                           shapeString(normalized) +
                           " and the input's element type, got " +
                           typeString(t));
  }
  results.push_back(type);
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions, convolution, pooling
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  SmallVector<Value, 2> operands{adaptor.getLhs(), adaptor.getRhs()};
  FailureOr<TensorEncodingAttr> enc = commonDevice(loc, operands);
  if (failed(enc))
    return failure();
  RankedTensorType a = tensorType(adaptor.getLhs());
  RankedTensorType b = tensorType(adaptor.getRhs());
  if (a.getRank() < 2 || b.getRank() < 2)
    return fail(loc, "matmul operands must have rank >= 2, got " +
                         typeString(a) + " and " + typeString(b));
  if (a.getElementType() != b.getElementType())
    return fail(loc, "matmul operands have different element types; insert "
                     "an explicit kiln.cast");
  SmallVector<AffineExpr> as = getDimSizes(a), bs = getDimSizes(b);
  AffineExpr m = as[a.getRank() - (adaptor.getTransposeA() ? 1 : 2)];
  AffineExpr ka = as[a.getRank() - (adaptor.getTransposeA() ? 2 : 1)];
  AffineExpr kb = bs[b.getRank() - (adaptor.getTransposeB() ? 1 : 2)];
  AffineExpr n = bs[b.getRank() - (adaptor.getTransposeB() ? 2 : 1)];
  if (ka != kb)
    return fail(loc, "matmul contraction mismatch: lhs has K=" + sizeString(ka) +
                         ", rhs has K=" + sizeString(kb));
  auto batch = broadcastSizes(ArrayRef<AffineExpr>(as).drop_back(2),
                              ArrayRef<AffineExpr>(bs).drop_back(2));
  if (!batch)
    return fail(loc, "matmul batch dimensions are not broadcast-compatible");
  SmallVector<AffineExpr> shape(*batch);
  shape.push_back(m);
  shape.push_back(n);
  results.push_back(typeWith(shape, a.getElementType(), *enc));
  return success();
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  SmallVector<Value, 3> operands{adaptor.getInput(), adaptor.getFilter(),
                                 adaptor.getBias()};
  if (failed(commonDevice(loc, operands)) ||
      failed(checkImageLayout(loc, adaptor.getInput())))
    return failure();
  RankedTensorType x = tensorType(adaptor.getInput());
  RankedTensorType w = tensorType(adaptor.getFilter());
  if (failed(requireStaticDims(loc, "conv2d", x, {1, 2, 3})) ||
      failed(rejectSymbolic(loc, "conv2d filter and bias",
                            ValueRange{adaptor.getFilter(), adaptor.getBias()})))
    return failure();
  if (w.getRank() != 4)
    return fail(loc, "conv2d filter must be 4-D [O, C/groups, KH, KW], got " +
                         typeString(w));
  if (w.getElementType() != x.getElementType())
    return fail(loc, "conv2d input and filter element types differ");
  int64_t groups = adaptor.getGroups();
  if (groups < 1)
    return fail(loc, "conv2d groups must be positive");
  int64_t groupedChannels;
  if (__builtin_mul_overflow(w.getDimSize(1), groups, &groupedChannels) ||
      x.getDimSize(1) != groupedChannels)
    return fail(loc, "conv2d input has " + Twine(x.getDimSize(1)) +
                         " channels but filter expects " +
                         Twine(w.getDimSize(1)) + " x " + Twine(groups) +
                         " groups");
  if (w.getDimSize(0) % groups != 0)
    return fail(loc, "conv2d output channels (" + Twine(w.getDimSize(0)) +
                         ") must be divisible by groups (" + Twine(groups) + ")");
  if (Value bias = adaptor.getBias()) {
    RankedTensorType b = tensorType(bias);
    if (b.getRank() != 1 || b.getDimSize(0) != w.getDimSize(0) ||
        b.getElementType() != x.getElementType())
      return fail(loc, "conv2d bias must be [" + Twine(w.getDimSize(0)) +
                           "] of the input's element type, got " +
                           typeString(b));
  }
  ArrayRef<int64_t> strides = adaptor.getStrides(),
                    padding = adaptor.getPadding(),
                    dilations = adaptor.getDilations();
  if (failed(checkWindowAttrs(loc, strides, padding, dilations)))
    return failure();
  int64_t oh = ref::windowOutputSize(x.getDimSize(2), padding[0], padding[2],
                            w.getDimSize(2), strides[0], dilations[0], false);
  int64_t ow = ref::windowOutputSize(x.getDimSize(3), padding[1], padding[3],
                            w.getDimSize(3), strides[1], dilations[1], false);
  if (oh < 1 || ow < 1)
    return fail(loc, "conv2d filter " + shapeString(w.getShape()) +
                         " does not fit the padded input " +
                         shapeString(x.getShape()));
  MLIRContext *context = x.getContext();
  results.push_back(typeWith({getDimSizes(x)[0],
                              getAffineConstantExpr(w.getDimSize(0), context),
                              getAffineConstantExpr(oh, context),
                              getAffineConstantExpr(ow, context)},
                             x.getElementType(), getEncoding(x),
                             getEncoding(x).getDimOrder()));
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(requireAttr(loc, adaptor.getKernelAttr(), "kernel")))
    return failure();
  return inferPool(loc, adaptor.getInput(), adaptor.getKernel(),
                   adaptor.getStrides(), adaptor.getPadding(), adaptor.getDilations(),
                   adaptor.getCeilMode(), results);
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(requireAttr(loc, adaptor.getKernelAttr(), "kernel")))
    return failure();
  if (!llvm::isa<FloatType>(tensorType(adaptor.getInput()).getElementType()))
    return fail(loc, "avg_pool2d needs a floating-point input");
  return inferPool(loc, adaptor.getInput(), adaptor.getKernel(),
                   adaptor.getStrides(), adaptor.getPadding(), adaptor.getDilations(),
                   adaptor.getCeilMode(), results);
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(MLIRContext *, OptLoc loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &results) {
  if (failed(commonDevice(loc, adaptor.getInput())))
    return failure();
  RankedTensorType type = tensorType(adaptor.getInput());
  if (type.getRank() < 3)
    return fail(loc, "global_avg_pool input must be [N, C, spatial...]");
  SmallVector<AffineExpr> shape = getDimSizes(type);
  for (int64_t d = 2; d < type.getRank(); ++d)
    shape[d] = getAffineConstantExpr(1, type.getContext());
  results.push_back(typeWith(shape, type.getElementType(), getEncoding(type),
                             getEncoding(type).getDimOrder()));
  return success();
}
