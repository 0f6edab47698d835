//===- KilnTypes.h - helpers for kiln tensor types --------------*- C++ -*-===//
//
// A kiln tensor is a builtin RankedTensorType whose encoding is a
// TensorEncodingAttr. These helpers build, inspect and parse them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNTYPES_H
#define KILN_IR_KILNTYPES_H

#include "kiln/IR/KilnAttrs.h"
#include "kiln/Reference/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir {
namespace kiln {

/// The most elements a kiln tensor may hold (the readers' and the
/// loader's limit too, ref::kMaxElements).
constexpr int64_t kMaxTensorElements = ::kiln::ref::kMaxElements;

/// True when `shape` has no negative dimension and the product of its
/// nonzero dimensions is at most kMaxTensorElements
/// (ref::withinElementLimit); dynamic dimensions are not counted.
bool withinElementLimit(ArrayRef<int64_t> shape);

/// True for a ranked tensor type carrying a #kiln.enc encoding.
bool isKilnTensorType(Type type);

/// The encoding of a kiln tensor type (null for anything else).
TensorEncodingAttr getEncoding(Type type);

/// A kiln tensor type; `dimOrder` empty means row-major.
RankedTensorType getKilnTensorType(ArrayRef<int64_t> shape, Type elementType,
                                   TensorEncodingAttr encoding);

/// The same type with another shape and/or element type, keeping the
/// encoding but resetting the layout to row-major when the rank changes.
RankedTensorType withShape(RankedTensorType type, ArrayRef<int64_t> shape);
RankedTensorType withElementType(RankedTensorType type, Type elementType);

/// The type without its encoding (for DenseElementsAttr values).
RankedTensorType stripEncoding(RankedTensorType type);

/// Row-major encoding on the CPU.
TensorEncodingAttr getDefaultEncoding(MLIRContext *context);

/// The element type named by a dtype (f32, f16, bf16, f64, i64, i32, i16,
/// i8, i1, u64, u32, u16, u8), or null for anything else.
Type parseDTypeName(MLIRContext *context, StringRef name);

/// Parses "cpu" or "cuda:N".
std::optional<std::pair<DeviceKind, int64_t>> parseDevice(StringRef text);

/// Parses "row_major", "nchw", "nhwc" or "perm[a, b, ...]" / "perm(a,b,...)"
/// into a dimension order (empty for row-major). Rank is used to check the
/// named 4-D layouts; returns std::nullopt and sets `error` on failure.
std::optional<SmallVector<int64_t>> parseLayout(StringRef text, int64_t rank,
                                                std::string &error);

/// Checks that `order` is empty or a permutation of [0, rank).
bool isValidDimOrder(ArrayRef<int64_t> order, int64_t rank);

/// NumPy broadcast of two shapes; std::nullopt if incompatible.
std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b);

/// Number of elements of a static shape.
int64_t getNumElements(ArrayRef<int64_t> shape);

} // namespace kiln
} // namespace mlir

#endif // KILN_IR_KILNTYPES_H
