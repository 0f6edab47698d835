//===- KilnAttrs.h - kiln attributes ----------------------------*- C++ -*-===//

#ifndef KILN_IR_KILNATTRS_H
#define KILN_IR_KILNATTRS_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TensorEncoding.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace kiln {

/// Where a tensor lives.
enum class DeviceKind : uint8_t { CPU = 0, CUDA = 1 };

} // namespace kiln
} // namespace mlir

#include "kiln/IR/KilnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/IR/KilnAttrs.h.inc"

#endif // KILN_IR_KILNATTRS_H
