//===- LayoutUtils.h - layouts the layout passes give values ----*- C++ -*-===//
//
// What kiln-assign-layouts (GPU targets) and kiln-cpu-channels-last (the
// CPU) share: the channels-last order, retyping a value's layout, and which
// constants may take any layout for free.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TRANSFORMS_LAYOUTUTILS_H
#define KILN_LIB_TRANSFORMS_LAYOUTUTILS_H

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"

namespace mlir {
namespace kiln {

/// Channels last: NHWC for an activation, KRSC (OHWI) for a filter.
inline constexpr int64_t kChannelsLast[] = {0, 2, 3, 1};

/// `type` stored in `dimOrder` (empty: row-major), on the same device.
inline RankedTensorType withDimOrder(Type type, ArrayRef<int64_t> dimOrder) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  TensorEncodingAttr e = getEncoding(tensor);
  // Symbolic sizes follow the logical dimensions: the layout keeps them.
  return RankedTensorType::get(tensor.getShape(), tensor.getElementType(),
                               TensorEncodingAttr::get(type.getContext(), dimOrder,
                                                       e.getDeviceKind(), e.getDeviceOrdinal(),
                                                       e.getSizes()));
}

inline RankedTensorType channelsLast(Type type) { return withDimOrder(type, kChannelsLast); }

inline bool isChannelsLast(Type type) {
  TensorEncodingAttr e = getEncoding(type);
  return e && e.getDimOrder() == ArrayRef<int64_t>(kChannelsLast);
}

/// A weight or literal only its one reader reads: its layout is chosen at
/// compile time (the executable stores it in its type's layout), with no
/// conversion at run time.
inline bool isPrivateConstant(Value value) {
  Operation *def = value.getDefiningOp();
  return def && llvm::isa<WeightOp, ConstantOp>(def) && value.hasOneUse();
}

} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_TRANSFORMS_LAYOUTUTILS_H
