//===- BuildOp.h - helpers shared by the frontends --------------*- C++ -*-===//
//
// Frontends create ops generically: infer the result types (which reports
// shape, dtype, layout and device errors at the op's location), create the
// op and verify it. Returns null after reporting an error.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_BUILDOP_H
#define KILN_FRONTEND_BUILDOP_H

#include "kiln/IR/KilnTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"

#include <algorithm>

namespace kiln {
namespace frontend {

template <typename OpT>
mlir::Operation *buildOp(mlir::OpBuilder &builder, mlir::Location loc,
                         mlir::ValueRange operands,
                         llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
  mlir::MLIRContext *context = builder.getContext();
  // Inference reads default-valued attributes: add the defaults first, as
  // op creation would.
  mlir::NamedAttrList attrList(attrs);
  mlir::OperationName(OpT::getOperationName(), context).populateDefaultAttrs(attrList);
  llvm::SmallVector<mlir::Type, 1> types;
  if (mlir::failed(OpT::inferReturnTypes(context, loc, operands,
                                         attrList.getDictionary(context),
                                         mlir::OpaqueProperties(nullptr),
                                         mlir::RegionRange(), types)))
    return nullptr;
  // Attributes can ask for any shape; element counts past the limit would
  // overflow wherever they are multiplied out.
  for (mlir::Type type : types)
    if (auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
        tensor && !mlir::kiln::withinElementLimit(tensor.getShape())) {
      mlir::emitError(loc) << "'" << OpT::getOperationName() << "' would make a tensor of shape ["
                           << llvm::make_range(tensor.getShape().begin(), tensor.getShape().end())
                           << "], more than 2^40 elements";
      return nullptr;
    }
  mlir::Operation *op = builder.create<OpT>(loc, types, operands, attrList.getAttrs());
  if (mlir::failed(mlir::verify(op))) {
    op->erase();
    return nullptr;
  }
  return op;
}

/// ONNX (and .kg) slice bounds: negative indices count from the end of the
/// dimension and out-of-range ones clamp, so that `kiln.slice` gets bounds
/// in range. `step` must not be 0; an empty dimension gives the empty
/// forward slice whatever the step (no reverse range fits in it).
inline void normalizeSliceBounds(int64_t dim, int64_t &step, int64_t &start, int64_t &end) {
  if (dim == 0) {
    start = end = 0;
    step = 1;
    return;
  }
  step = std::clamp<int64_t>(step, -dim, dim); // a longer stride takes the same one element
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
}

} // namespace frontend
} // namespace kiln

#endif // KILN_FRONTEND_BUILDOP_H
