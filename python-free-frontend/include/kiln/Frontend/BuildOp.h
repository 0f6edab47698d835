//===- BuildOp.h - create kiln ops from frontends ---------------*- C++ -*-===//
//
// Frontends create ops generically: infer the result types (which reports
// shape, dtype, layout and device errors at the op's location), create the
// op and verify it. Returns null after reporting an error.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_BUILDOP_H
#define KILN_FRONTEND_BUILDOP_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

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
  mlir::Operation *op = builder.create<OpT>(loc, types, operands, attrList.getAttrs());
  if (mlir::failed(mlir::verify(op))) {
    op->erase();
    return nullptr;
  }
  return op;
}

} // namespace frontend
} // namespace kiln

#endif // KILN_FRONTEND_BUILDOP_H
