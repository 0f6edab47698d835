//===- KgOps.cpp - the op calls of the .kg language -----------------------===//

#include "KgOps.h"

#include "kiln/Frontend/BuildOp.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/ReferenceConversion.h"


#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::kiln;

namespace kiln {
namespace frontend {

//===----------------------------------------------------------------------===//
// KgCall: typed access to the attributes of one call
//===----------------------------------------------------------------------===//

void KgCall::error(const llvm::Twine &message, llvm::SMLoc at) {
  mlir::emitError(at.isValid() ? toLoc(at) : loc) << message;
  failed = true;
}

int64_t KgCall::rank(unsigned operand) const {
  return llvm::cast<RankedTensorType>(operands[operand].getType()).getRank();
}

const KgAttrValue *KgCall::find(llvm::StringRef name, bool required) {
  auto it = attrs.find(name);
  if (it != attrs.end())
    return &it->second;
  if (required)
    error("missing required attribute '" + name + "'");
  return nullptr;
}

void KgCall::addInt(llvm::StringRef name, std::optional<int64_t> defaultValue) {
  const KgAttrValue *v = find(name, !defaultValue);
  if (v && v->kind != KgAttrValue::Int)
    return error("attribute '" + name + "' must be an integer", v->loc);
  if (v || defaultValue)
    built.push_back(builder.getNamedAttr(
        name, builder.getI64IntegerAttr(v ? v->intValue : *defaultValue)));
}

void KgCall::addFloat(llvm::StringRef name,
                      std::optional<double> defaultValue) {
  const KgAttrValue *v = find(name, !defaultValue);
  if (v && v->kind != KgAttrValue::Float && v->kind != KgAttrValue::Int)
    return error("attribute '" + name + "' must be a number", v->loc);
  double value = !v ? *defaultValue
                    : (v->kind == KgAttrValue::Int ? double(v->intValue)
                                                   : v->floatValue);
  if (v || defaultValue)
    built.push_back(builder.getNamedAttr(name, builder.getF64FloatAttr(value)));
}

std::string literalFitProblem(double value, ref::DType dtype) {
  char shown[32];
  if (ref::isFloat(dtype)) {
    if (std::isfinite(ref::roundToFloat(dtype, value)))
      return "";
    std::snprintf(shown, sizeof(shown), "%g", value);
    return std::string(shown) + " does not fit " + ref::dtypeName(dtype) +
           " (past its largest finite value)";
  }
  int bits = dtype == ref::DType::I1 ? 1 : 8 * static_cast<int>(ref::byteWidth(dtype));
  bool isSigned = dtype != ref::DType::I1 && !ref::isUnsigned(dtype);
  double lo = isSigned ? -std::ldexp(1.0, bits - 1) : 0.0;
  double hi = std::ldexp(1.0, isSigned ? bits - 1 : bits) - 1;
  // Every literal past 2^53 in magnitude parses to 2^53 or more.
  constexpr double kExact = 9007199254740992.0;
  if (std::abs(value) < 1e18)
    std::snprintf(shown, sizeof(shown), "%lld", static_cast<long long>(value));
  else
    std::snprintf(shown, sizeof(shown), "%e", value);
  if (value < lo || value > hi)
    return std::string(shown) + " does not fit " + ref::dtypeName(dtype);
  if (std::abs(value) >= kExact)
    return "integer " + std::string(shown) +
           " (as read) is 2^53 or more in magnitude: integer values are held exactly only "
           "below 2^53; read larger ones with file(...)";
  return "";
}

void KgCall::checkElementValue(llvm::StringRef name) {
  const KgAttrValue *v = find(name, false);
  if (!v || failed || operands.empty())
    return;
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(operands[0].getType());
  std::optional<ref::DType> dtype =
      type ? mlir::kiln::toReferenceDType(type.getElementType()) : std::nullopt;
  if (!dtype)
    return;
  if (v->kind == KgAttrValue::Float && !ref::isFloat(*dtype))
    return error("attribute '" + name + "' must be an integer for a " + ref::dtypeName(*dtype) +
                     " tensor",
                 v->loc);
  double value = v->kind == KgAttrValue::Int ? double(v->intValue) : v->floatValue;
  std::string problem = literalFitProblem(value, *dtype);
  if (!problem.empty())
    error("attribute '" + name + "': " + problem, v->loc);
}

void KgCall::addBool(llvm::StringRef name, std::optional<bool> defaultValue) {
  const KgAttrValue *v = find(name, !defaultValue);
  if (v && v->kind != KgAttrValue::Bool)
    return error("attribute '" + name + "' must be true or false", v->loc);
  if (v || defaultValue)
    built.push_back(builder.getNamedAttr(
        name, builder.getBoolAttr(v ? v->boolValue : *defaultValue)));
}

void KgCall::addInts(llvm::StringRef name,
                     std::optional<std::vector<int64_t>> defaultValue) {
  const KgAttrValue *v = find(name, !defaultValue);
  if (v && v->kind != KgAttrValue::IntList)
    return error("attribute '" + name + "' must be a list of integers",
                 v->loc);
  if (v || defaultValue)
    built.push_back(builder.getNamedAttr(
        name, builder.getDenseI64ArrayAttr(v ? v->list : *defaultValue)));
}

void KgCall::addAxis(llvm::StringRef name, std::optional<int64_t> defaultValue) {
  const KgAttrValue *v = find(name, !defaultValue);
  if (v && v->kind != KgAttrValue::Int)
    return error("attribute '" + name + "' must be an integer", v->loc);
  if (!v && !defaultValue)
    return;
  int64_t axis = v ? v->intValue : *defaultValue, r = rank();
  if (axis < -r || axis >= r)
    return error("axis " + llvm::Twine(axis) + " is out of range for rank " +
                     llvm::Twine(r),
                 v ? v->loc : llvm::SMLoc());
  built.push_back(
      builder.getNamedAttr(name, builder.getI64IntegerAttr(axis < 0 ? axis + r : axis)));
}

void KgCall::addAxes(llvm::StringRef name) {
  const KgAttrValue *v = find(name, false);
  int64_t r = rank();
  std::vector<int64_t> axes;
  if (!v) {
    for (int64_t d = 0; d < r; ++d)
      axes.push_back(d);
  } else if (v->kind == KgAttrValue::Int) {
    axes.push_back(v->intValue);
  } else if (v->kind == KgAttrValue::IntList) {
    axes = v->list;
  } else {
    return error("attribute '" + name + "' must be an axis or list of axes",
                 v->loc);
  }
  for (int64_t &axis : axes) {
    if (axis < -r || axis >= r)
      return error("axis " + llvm::Twine(axis) + " is out of range for rank " +
                       llvm::Twine(r),
                   v ? v->loc : llvm::SMLoc());
    if (axis < 0)
      axis += r;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return error("an axis is listed twice", v ? v->loc : llvm::SMLoc());
  built.push_back(builder.getNamedAttr(name, builder.getDenseI64ArrayAttr(axes)));
}

void KgCall::addPadding(llvm::StringRef name) {
  const KgAttrValue *v = find(name, false);
  std::vector<int64_t> pads{0, 0, 0, 0};
  if (v) {
    std::vector<int64_t> given;
    if (v->kind == KgAttrValue::Int)
      given = {v->intValue};
    else if (v->kind == KgAttrValue::IntList)
      given = v->list;
    if (given.size() == 1)
      pads = {given[0], given[0], given[0], given[0]};
    else if (given.size() == 2)
      pads = {given[0], given[1], given[0], given[1]};
    else if (given.size() == 4)
      pads = given;
    else
      return error("padding takes 1, 2 ([h, w]) or 4 ([top, left, bottom, "
                   "right]) integers",
                   v->loc);
  }
  built.push_back(builder.getNamedAttr(name, builder.getDenseI64ArrayAttr(pads)));
}

void KgCall::addType(llvm::StringRef name) {
  const KgAttrValue *v = find(name, true);
  if (!v)
    return;
  Type type;
  if (v->kind == KgAttrValue::Word)
    type = parseDTypeName(builder.getContext(), v->text);
  if (!type)
    return error("attribute '" + name +
                     "' must be a dtype: f32, f16, bf16, f64, i64, i32, i16, i8, i1, u64, u32, u16, u8",
                 v->loc);
  built.push_back(builder.getNamedAttr(name, TypeAttr::get(type)));
}

void KgCall::addDevice(llvm::StringRef name) {
  const KgAttrValue *v = find(name, true);
  if (!v)
    return;
  if ((v->kind != KgAttrValue::Word && v->kind != KgAttrValue::String) ||
      !parseDevice(v->text))
    return error("attribute '" + name + "' must be a device: cpu or cuda:N",
                 v->loc);
  built.push_back(builder.getNamedAttr(name, builder.getStringAttr(v->text)));
}

void KgCall::addLayout(llvm::StringRef name, llvm::StringRef opName) {
  const KgAttrValue *v = find(name, true);
  if (!v)
    return;
  std::string message;
  std::optional<SmallVector<int64_t>> order;
  if (v->kind == KgAttrValue::Word)
    order = parseLayout(v->text, rank(), message);
  else
    message = "expected a layout: row_major, nchw, nhwc or perm[...]";
  if (!order)
    return error(message, v->loc);
  built.push_back(
      builder.getNamedAttr(opName, builder.getDenseI64ArrayAttr(*order)));
}

//===----------------------------------------------------------------------===//
// Building ops
//===----------------------------------------------------------------------===//

namespace {

/// Builds the op of a call once its attributes are read.
template <typename OpT>
Operation *create(KgCall &call) {
  if (call.failed)
    return nullptr;
  return buildOp<OpT>(call.builder, call.loc, call.operands, call.built);
}

/// ONNX-style slice: starts/ends/steps for the listed axes (default all),
/// negative indices counting from the end and out-of-range ones clamped.
Operation *buildSlice(KgCall &call) {
  RankedTensorType type = llvm::cast<RankedTensorType>(call.operands[0].getType());
  int64_t r = type.getRank();
  const KgAttrValue *starts = call.find("starts", true);
  const KgAttrValue *ends = call.find("ends", true);
  const KgAttrValue *axes = call.find("axes", false);
  const KgAttrValue *steps = call.find("steps", false);
  if (call.failed)
    return nullptr;
  for (const KgAttrValue *v : {starts, ends, axes, steps})
    if (v && v->kind != KgAttrValue::IntList) {
      call.error("slice attributes must be lists of integers", v->loc);
      return nullptr;
    }
  std::vector<int64_t> axisList;
  if (axes) {
    axisList = axes->list;
  } else {
    for (int64_t d = 0; d < static_cast<int64_t>(starts->list.size()); ++d)
      axisList.push_back(d);
  }
  size_t count = axisList.size();
  if (starts->list.size() != count || ends->list.size() != count ||
      (steps && steps->list.size() != count)) {
    call.error("slice: starts, ends, axes and steps must have the same length");
    return nullptr;
  }
  std::vector<int64_t> fullStarts(r, 0), fullEnds(type.getShape()),
      fullSteps(r, 1);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axisList[i];
    if (axis < -r || axis >= r || seen[axis < 0 ? axis + r : axis]) {
      call.error("slice: axis " + llvm::Twine(axis) +
                     " is out of range or repeated",
                 axes ? axes->loc : llvm::SMLoc());
      return nullptr;
    }
    if (axis < 0)
      axis += r;
    seen[axis] = true;
    int64_t dim = type.getDimSize(axis);
    int64_t step = steps ? steps->list[i] : 1;
    if (step == 0) {
      call.error("slice: step must not be 0", steps->loc);
      return nullptr;
    }
    int64_t start = starts->list[i], end = ends->list[i];
    normalizeSliceBounds(dim, step, start, end);
    fullStarts[axis] = start;
    fullEnds[axis] = end;
    fullSteps[axis] = step;
  }
  call.built.push_back(call.builder.getNamedAttr(
      "starts", call.builder.getDenseI64ArrayAttr(fullStarts)));
  call.built.push_back(call.builder.getNamedAttr(
      "ends", call.builder.getDenseI64ArrayAttr(fullEnds)));
  call.built.push_back(call.builder.getNamedAttr(
      "steps", call.builder.getDenseI64ArrayAttr(fullSteps)));
  return create<SliceOp>(call);
}

template <typename OpT>
Operation *buildReduce(KgCall &call) {
  call.addAxes("axes");
  call.addBool("keepdims", false);
  return create<OpT>(call);
}

template <typename OpT>
Operation *buildPool(KgCall &call) {
  call.addInts("kernel", std::nullopt);
  call.addInts("strides", std::vector<int64_t>{1, 1});
  call.addPadding("padding");
  call.addInts("dilations", std::vector<int64_t>{1, 1});
  call.addBool("ceil_mode", false);
  call.addBool("count_include_pad", false);
  return create<OpT>(call);
}

llvm::StringMap<KgOpSpec> buildTable() {
  llvm::StringMap<KgOpSpec> m;
  auto simple = [&](const char *name, unsigned arity,
                    Operation *(*build)(KgCall &)) {
    m[name] = KgOpSpec{arity, arity, {}, build};
  };
  simple("neg", 1, create<NegOp>);
  simple("abs", 1, create<AbsOp>);
  simple("exp", 1, create<ExpOp>);
  simple("log", 1, create<LogOp>);
  simple("sqrt", 1, create<SqrtOp>);
  simple("rsqrt", 1, create<RsqrtOp>);
  simple("tanh", 1, create<TanhOp>);
  simple("sigmoid", 1, create<SigmoidOp>);
  simple("relu", 1, create<ReluOp>);
  simple("gelu", 1, create<GeluOp>);
  simple("erf", 1, create<ErfOp>);
  simple("not", 1, create<NotOp>);
  simple("floor", 1, create<FloorOp>);
  simple("ceil", 1, create<CeilOp>);
  simple("round", 1, create<RoundOp>);
  simple("sin", 1, create<SinOp>);
  simple("cos", 1, create<CosOp>);
  simple("tan", 1, create<TanOp>);
  simple("asin", 1, create<AsinOp>);
  simple("acos", 1, create<AcosOp>);
  simple("atan", 1, create<AtanOp>);
  simple("sinh", 1, create<SinhOp>);
  simple("cosh", 1, create<CoshOp>);
  simple("asinh", 1, create<AsinhOp>);
  simple("acosh", 1, create<AcoshOp>);
  simple("atanh", 1, create<AtanhOp>);
  simple("sign", 1, create<SignOp>);
  simple("add", 2, create<AddOp>);
  simple("sub", 2, create<SubOp>);
  simple("mul", 2, create<MulOp>);
  simple("div", 2, create<DivOp>);
  simple("pow", 2, create<PowOp>);
  simple("max", 2, create<MaxOp>);
  simple("min", 2, create<MinOp>);
  simple("and", 2, create<AndOp>);
  simple("or", 2, create<OrOp>);
  simple("eq", 2, create<EqOp>);
  simple("ne", 2, create<NeOp>);
  simple("lt", 2, create<LtOp>);
  simple("le", 2, create<LeOp>);
  simple("gt", 2, create<GtOp>);
  simple("ge", 2, create<GeOp>);
  simple("select", 3, create<SelectOp>);
  simple("where", 3, create<SelectOp>);
  simple("global_avg_pool", 1, create<GlobalAvgPoolOp>);

  m["mod"] = {2, 2, {"fmod"}, [](KgCall &c) {
                c.addBool("fmod", false);
                return create<ModOp>(c);
              }};
  m["cast"] = {1, 1, {"to"}, [](KgCall &c) {
                 c.addType("to");
                 return create<CastOp>(c);
               }};
  m["reshape"] = {1, 1, {"shape"}, [](KgCall &c) {
                    c.addInts("shape", std::nullopt);
                    return create<ReshapeOp>(c);
                  }};
  m["transpose"] = {1, 1, {"perm"}, [](KgCall &c) {
                      // Default: reverse the dimensions, as NumPy does.
                      std::vector<int64_t> reversed;
                      for (int64_t d = c.rank() - 1; d >= 0; --d)
                        reversed.push_back(d);
                      c.addInts("perm", reversed);
                      return create<TransposeOp>(c);
                    }};
  m["broadcast"] = {1, 1, {"shape"}, [](KgCall &c) {
                      c.addInts("shape", std::nullopt);
                      return create<BroadcastOp>(c);
                    }};
  m["slice"] = {1, 1, {"starts", "ends", "axes", "steps"}, buildSlice};
  m["concat"] = {1, ~0u, {"axis"}, [](KgCall &c) {
                   c.addAxis("axis", std::nullopt);
                   return create<ConcatOp>(c);
                 }};
  m["pad"] = {1, 1, {"low", "high", "value"}, [](KgCall &c) {
                c.addInts("low", std::nullopt);
                c.addInts("high", std::nullopt);
                c.addFloat("value", 0.0);
                c.checkElementValue("value");
                return create<PadOp>(c);
              }};
  m["gather"] = {2, 2, {"axis"}, [](KgCall &c) {
                   c.addAxis("axis", 0);
                   return create<GatherOp>(c);
                 }};
  m["gather_elements"] = {2, 2, {"axis"}, [](KgCall &c) {
                            c.addAxis("axis", 0);
                            return create<GatherElementsOp>(c);
                          }};
  m["scatter_elements"] = {3, 3, {"axis", "reduction"}, [](KgCall &c) {
                             c.addAxis("axis", 0);
                             const KgAttrValue *r = c.find("reduction", false);
                             if (r && r->kind != KgAttrValue::Word)
                               c.error("reduction must be none, add or mul", r->loc);
                             if (r)
                               c.built.push_back(c.builder.getNamedAttr("reduction", c.builder.getStringAttr(r->text)));
                             return create<ScatterElementsOp>(c);
                           }};
  m["argsort"] = {1, 1, {"axis", "descending"}, [](KgCall &c) {
                    c.addAxis("axis", -1);
                    c.addBool("descending", false);
                    return create<ArgSortOp>(c);
                  }};
  m["transfer"] = {1, 1, {"to"}, [](KgCall &c) {
                     c.addDevice("to");
                     return create<TransferOp>(c);
                   }};
  m["relayout"] = {1, 1, {"layout"}, [](KgCall &c) {
                     c.addLayout("layout", "dim_order");
                     return create<RelayoutOp>(c);
                   }};
  m["reduce_sum"] = {1, 1, {"axes", "keepdims"}, buildReduce<ReduceSumOp>};
  m["reduce_mean"] = {1, 1, {"axes", "keepdims"}, buildReduce<ReduceMeanOp>};
  m["reduce_max"] = {1, 1, {"axes", "keepdims"}, buildReduce<ReduceMaxOp>};
  m["reduce_min"] = {1, 1, {"axes", "keepdims"}, buildReduce<ReduceMinOp>};
  m["reduce_prod"] = {1, 1, {"axes", "keepdims"}, buildReduce<ReduceProdOp>};
  m["argmax"] = {1, 1, {"axis", "keepdims"}, [](KgCall &c) {
                   c.addAxis("axis", -1);
                   c.addBool("keepdims", false);
                   return create<ArgMaxOp>(c);
                 }};
  m["softmax"] = {1, 1, {"axis"}, [](KgCall &c) {
                    c.addAxis("axis", -1);
                    return create<SoftmaxOp>(c);
                  }};
  m["log_softmax"] = {1, 1, {"axis"}, [](KgCall &c) {
                        c.addAxis("axis", -1);
                        return create<LogSoftmaxOp>(c);
                      }};
  m["batch_norm"] = {5, 5, {"epsilon"}, [](KgCall &c) {
                       c.addFloat("epsilon", 1e-5);
                       return create<BatchNormOp>(c);
                     }};
  m["layer_norm"] = {2, 3, {"axis", "epsilon"}, [](KgCall &c) {
                       c.addAxis("axis", -1);
                       c.addFloat("epsilon", 1e-5);
                       return create<LayerNormOp>(c);
                     }};
  m["matmul"] = {2, 2, {"transpose_a", "transpose_b"}, [](KgCall &c) {
                   c.addBool("transpose_a", false);
                   c.addBool("transpose_b", false);
                   return create<MatMulOp>(c);
                 }};
  m["conv2d"] = {2, 3, {"strides", "padding", "dilations", "groups"},
                 [](KgCall &c) {
                   c.addInts("strides", std::vector<int64_t>{1, 1});
                   c.addPadding("padding");
                   c.addInts("dilations", std::vector<int64_t>{1, 1});
                   c.addInt("groups", 1);
                   return create<Conv2dOp>(c);
                 }};
  const std::vector<const char *> poolAttrs{"kernel", "strides", "padding", "dilations",
                                            "ceil_mode", "count_include_pad"};
  m["max_pool2d"] = {1, 1, poolAttrs, buildPool<MaxPool2dOp>};
  m["avg_pool2d"] = {1, 1, poolAttrs, buildPool<AvgPool2dOp>};
  return m;
}

const llvm::StringMap<KgOpSpec> &table() {
  static const llvm::StringMap<KgOpSpec> specs = buildTable();
  return specs;
}

} // namespace

const KgOpSpec *lookupKgOp(llvm::StringRef name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<llvm::StringRef> getKgOpNames() {
  std::vector<llvm::StringRef> names;
  for (const auto &entry : table())
    names.push_back(entry.getKey());
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace frontend
} // namespace kiln
