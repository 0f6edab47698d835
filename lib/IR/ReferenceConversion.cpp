//===- ReferenceConversion.cpp - literals <-> reference tensors -----------===//

#include "kiln/IR/ReferenceConversion.h"

#include "kiln/IR/KilnTypes.h"

using namespace mlir;
using namespace mlir::kiln;
namespace ref = ::kiln::ref;

std::optional<ref::DType> mlir::kiln::toReferenceDType(Type t) {
  if (t.isF32()) return ref::DType::F32;
  if (t.isF16()) return ref::DType::F16;
  if (t.isBF16()) return ref::DType::BF16;
  if (t.isF64()) return ref::DType::F64;
  if (t.isSignlessInteger(64)) return ref::DType::I64;
  if (t.isSignlessInteger(32)) return ref::DType::I32;
  if (t.isSignlessInteger(8)) return ref::DType::I8;
  if (t.isSignlessInteger(1)) return ref::DType::I1;
  if (t.isSignlessInteger(16)) return ref::DType::I16;
  if (t.isUnsignedInteger(8)) return ref::DType::U8;
  if (t.isUnsignedInteger(16)) return ref::DType::U16;
  if (t.isUnsignedInteger(32)) return ref::DType::U32;
  if (t.isUnsignedInteger(64)) return ref::DType::U64;
  return std::nullopt;
}

FailureOr<ref::Tensor> mlir::kiln::toReferenceTensor(ElementsAttr value) {
  auto dense = llvm::dyn_cast<DenseElementsAttr>(value);
  auto type = llvm::dyn_cast<RankedTensorType>(value.getType());
  if (!dense || !type)
    return failure();
  std::optional<ref::DType> dtype = toReferenceDType(type.getElementType());
  if (!dtype)
    return failure();
  ref::Tensor t = ref::Tensor::zeros(*dtype, ref::Shape(type.getShape()));
  int64_t k = 0;
  switch (*dtype) {
  case ref::DType::F32:
    for (float v : dense.getValues<float>())
      t.f[k++] = v;
    break;
  case ref::DType::F64:
    for (double v : dense.getValues<double>())
      t.f[k++] = v;
    break;
  case ref::DType::F16:
  case ref::DType::BF16:
    for (APFloat v : dense.getValues<APFloat>())
      t.f[k++] = v.convertToFloat(); // exact: float holds every f16 and bf16 value
    break;
  case ref::DType::I1:
    for (bool v : dense.getValues<bool>())
      t.i[k++] = v;
    break;
  default: {
    bool isUnsigned = ref::isUnsigned(*dtype);
    for (APInt v : dense.getValues<APInt>())
      t.i[k++] = isUnsigned ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue();
    break;
  }
  }
  return t;
}

DenseElementsAttr mlir::kiln::toElementsAttr(const ref::Tensor &t,
                                             RankedTensorType type) {
  RankedTensorType plain = stripEncoding(type);
  switch (t.dtype) {
  case ref::DType::F32: {
    SmallVector<float> values(t.f.begin(), t.f.end());
    return DenseElementsAttr::get(plain, ArrayRef<float>(values));
  }
  case ref::DType::F64:
    return DenseElementsAttr::get(plain, ArrayRef<double>(t.f));
  case ref::DType::F16:
  case ref::DType::BF16: {
    bool half = t.dtype == ref::DType::F16;
    const llvm::fltSemantics &semantics =
        half ? APFloat::IEEEhalf() : APFloat::BFloat();
    SmallVector<APFloat> values;
    values.reserve(t.f.size());
    for (double v : t.f) {
      float f = static_cast<float>(v);
      uint16_t bits = half ? ref::floatToHalf(f) : ref::floatToBFloat16(f);
      values.emplace_back(semantics, APInt(16, bits));
    }
    return DenseElementsAttr::get(plain, values);
  }
  case ref::DType::I1: {
    SmallVector<bool> values(t.i.begin(), t.i.end());
    return DenseElementsAttr::get(plain, ArrayRef<bool>(values));
  }
  default: {
    unsigned width = type.getElementType().getIntOrFloatBitWidth();
    SmallVector<APInt> values;
    values.reserve(t.i.size());
    for (int64_t v : t.i)
      values.emplace_back(width, static_cast<uint64_t>(v), /*isSigned=*/true);
    return DenseElementsAttr::get(plain, values);
  }
  }
}


/// The affine-map attributes whose values exist per size signature.
static bool isPerSignatureAttr(StringRef name) {
  return llvm::is_contained({"sizes", "end_sizes", "run_time_axes", "run_time_bounds",
                             "result_sizes"},
                            name);
}

bool mlir::kiln::hasPerSignatureAttrs(Operation *op) {
  for (NamedAttribute named : op->getAttrs())
    if (auto map = llvm::dyn_cast<AffineMapAttr>(named.getValue()))
      if (isPerSignatureAttr(named.getName()) ||
          (named.getName() == "length" && !map.getValue().isConstant()))
        return true;
  return false;
}

FailureOr<ref::OpAttrs> mlir::kiln::toReferenceAttrs(Operation *op) {
  ref::OpAttrs attrs;
  for (NamedAttribute named : op->getAttrs()) {
    ref::OpAttr a;
    Attribute value = named.getValue();
    if (auto boolean = llvm::dyn_cast<BoolAttr>(value)) { // a BoolAttr is an IntegerAttr
      a.kind = ref::OpAttr::Bool;
      a.i = boolean.getValue();
    } else if (llvm::isa<UnitAttr>(value)) { // a marker (kiln.dequantize_in_gemm)
      a.kind = ref::OpAttr::Bool;
      a.i = 1;
    } else if (auto integer = llvm::dyn_cast<IntegerAttr>(value)) {
      a.kind = ref::OpAttr::Int;
      a.i = integer.getInt();
    } else if (auto fl = llvm::dyn_cast<FloatAttr>(value)) {
      a.kind = ref::OpAttr::Float;
      a.f = fl.getValueAsDouble();
    } else if (auto ints = llvm::dyn_cast<DenseI64ArrayAttr>(value)) {
      a.kind = ref::OpAttr::Ints;
      a.ints.assign(ints.asArrayRef().begin(), ints.asArrayRef().end());
    } else if (auto str = llvm::dyn_cast<StringAttr>(value)) {
      a.kind = ref::OpAttr::String;
      a.s = str.str();
    } else if (auto type = llvm::dyn_cast<TypeAttr>(value);
               type && toReferenceDType(type.getValue())) {
      a.kind = ref::OpAttr::Type;
      a.dtype = *toReferenceDType(type.getValue());
    } else if (auto map = llvm::dyn_cast<AffineMapAttr>(value);
               map && named.getName() == "length") {
      // An iota's length: its value, or (a symbolic one) an entry the
      // executable writes as the size's expression.
      a.kind = ref::OpAttr::Ints;
      if (auto c = llvm::dyn_cast<AffineConstantExpr>(map.getValue().getResult(0)))
        a.ints = {c.getValue()};
    } else if (llvm::isa<AffineMapAttr>(value) && isPerSignatureAttr(named.getName())) {
      // A symbolic reshape or broadcast target, slice end or bounds, or a
      // reduction's axes: its values exist per size signature (the
      // executable writes them as the `shape`, `ends`, `starts`, `steps` or
      // `axes` entries' sizes); result sizes are the type's.
      continue;
    } else {
      return op->emitOpError("attribute '") << named.getName().str()
                                            << "' has no reference form";
    }
    attrs[named.getName().str()] = a;
  }
  return attrs;
}
