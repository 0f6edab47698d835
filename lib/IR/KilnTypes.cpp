//===- KilnTypes.cpp - helpers for kiln tensor types ----------------------===//

#include "kiln/IR/KilnTypes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::kiln;

bool mlir::kiln::withinElementLimit(ArrayRef<int64_t> shape) {
  // Dynamic dimensions are bounded by their symbols' ranges, not here.
  SmallVector<int64_t> staticDims;
  llvm::copy_if(shape, std::back_inserter(staticDims),
                [](int64_t d) { return !ShapedType::isDynamic(d); });
  return ::kiln::ref::withinElementLimit(staticDims);
}

bool mlir::kiln::isKilnTensorType(Type type) {
  auto tensor = llvm::dyn_cast_or_null<RankedTensorType>(type);
  return tensor && llvm::isa_and_nonnull<TensorEncodingAttr>(tensor.getEncoding());
}

TensorEncodingAttr mlir::kiln::getEncoding(Type type) {
  auto tensor = llvm::dyn_cast_or_null<RankedTensorType>(type);
  if (!tensor)
    return {};
  return llvm::dyn_cast_or_null<TensorEncodingAttr>(tensor.getEncoding());
}

RankedTensorType mlir::kiln::getKilnTensorType(ArrayRef<int64_t> shape,
                                               Type elementType,
                                               TensorEncodingAttr encoding) {
  return RankedTensorType::get(shape, elementType, encoding);
}

RankedTensorType mlir::kiln::withShape(RankedTensorType type,
                                       ArrayRef<int64_t> shape) {
  TensorEncodingAttr enc = getEncoding(type);
  if (enc && static_cast<int64_t>(shape.size()) != type.getRank())
    enc = TensorEncodingAttr::get(type.getContext(), {}, enc.getDeviceKind(),
                                  enc.getDeviceOrdinal());
  // A static shape has no symbolic sizes.
  if (enc && !llvm::any_of(shape, ShapedType::isDynamic))
    enc = enc.withSizes({});
  return RankedTensorType::get(shape, type.getElementType(), enc);
}

RankedTensorType mlir::kiln::withElementType(RankedTensorType type,
                                             Type elementType) {
  return RankedTensorType::get(type.getShape(), elementType,
                               type.getEncoding());
}

RankedTensorType mlir::kiln::stripEncoding(RankedTensorType type) {
  return RankedTensorType::get(type.getShape(), type.getElementType());
}

TensorEncodingAttr mlir::kiln::getDefaultEncoding(MLIRContext *context) {
  return TensorEncodingAttr::get(context, {}, DeviceKind::CPU, 0);
}

Type mlir::kiln::parseDTypeName(MLIRContext *context, StringRef name) {
  return llvm::StringSwitch<Type>(name)
      .Case("f32", Float32Type::get(context))
      .Case("f16", Float16Type::get(context))
      .Case("bf16", BFloat16Type::get(context))
      .Case("f64", Float64Type::get(context))
      .Case("i64", IntegerType::get(context, 64))
      .Case("i32", IntegerType::get(context, 32))
      .Case("i8", IntegerType::get(context, 8))
      .Case("i1", IntegerType::get(context, 1))
      .Case("i16", IntegerType::get(context, 16))
      .Case("u8", IntegerType::get(context, 8, IntegerType::Unsigned))
      .Case("u16", IntegerType::get(context, 16, IntegerType::Unsigned))
      .Case("u32", IntegerType::get(context, 32, IntegerType::Unsigned))
      .Case("u64", IntegerType::get(context, 64, IntegerType::Unsigned))
      .Default(Type());
}

std::optional<std::pair<DeviceKind, int64_t>>
mlir::kiln::parseDevice(StringRef text) {
  text = text.trim();
  if (text == "cpu")
    return std::make_pair(DeviceKind::CPU, int64_t(0));
  if (text.consume_front("cuda:")) {
    int64_t ordinal;
    if (text.empty() || text.getAsInteger(10, ordinal) || ordinal < 0 ||
        ordinal > 1023)
      return std::nullopt;
    return std::make_pair(DeviceKind::CUDA, ordinal);
  }
  return std::nullopt;
}

bool mlir::kiln::isValidDimOrder(ArrayRef<int64_t> order, int64_t rank) {
  if (order.empty())
    return true;
  if (static_cast<int64_t>(order.size()) != rank)
    return false;
  SmallVector<bool> seen(rank, false);
  for (int64_t d : order) {
    if (d < 0 || d >= rank || seen[d])
      return false;
    seen[d] = true;
  }
  return true;
}

std::optional<SmallVector<int64_t>>
mlir::kiln::parseLayout(StringRef text, int64_t rank, std::string &error) {
  text = text.trim();
  if (text == "row_major")
    return SmallVector<int64_t>{};
  if (text == "nchw" || text == "nhwc") {
    if (rank != 4) {
      error = "layout '" + text.str() + "' needs a 4-D tensor, got rank " +
              std::to_string(rank);
      return std::nullopt;
    }
    if (text == "nchw")
      return SmallVector<int64_t>{};
    return SmallVector<int64_t>{0, 2, 3, 1};
  }
  if (text.consume_front("perm")) {
    text = text.trim();
    char close = text.starts_with("[") ? ']' : ')';
    if (!(text.starts_with("[") || text.starts_with("(")) ||
        !text.ends_with(StringRef(&close, 1))) {
      error = "expected perm[d0, d1, ...]";
      return std::nullopt;
    }
    text = text.drop_front().drop_back();
    SmallVector<StringRef> parts;
    text.split(parts, ',', -1, /*KeepEmpty=*/false);
    SmallVector<int64_t> order;
    for (StringRef part : parts) {
      int64_t d;
      if (part.trim().getAsInteger(10, d)) {
        error = "bad dimension '" + part.trim().str() + "' in perm";
        return std::nullopt;
      }
      order.push_back(d);
    }
    if (!isValidDimOrder(order, rank) || order.empty()) {
      error = "perm must be a permutation of 0.." + std::to_string(rank - 1);
      return std::nullopt;
    }
    // The identity permutation is row-major: store it canonically.
    bool identity = true;
    for (size_t i = 0; i < order.size(); ++i)
      identity &= order[i] == static_cast<int64_t>(i);
    if (identity)
      order.clear();
    return order;
  }
  error = "unknown layout '" + text.str() +
          "' (expected row_major, nchw, nhwc or perm[...])";
  return std::nullopt;
}

std::optional<SmallVector<int64_t>>
mlir::kiln::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t mlir::kiln::getNumElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
