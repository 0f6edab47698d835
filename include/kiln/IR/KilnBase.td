//===- KilnBase.td - kiln dialect definition ---------------*- tablegen -*-===//
//
// The kiln Graph IR: value-semantics tensor ops whose every value carries
// shape, dtype, layout and device in its type.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNBASE_TD
#define KILN_IR_KILNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::mlir::kiln";
  let summary = "The kiln graph dialect";
  let description = [{
    Graph-level tensor operations for the kiln compiler. Operands and results
    are ranked tensors whose encoding is a `#kiln.enc<layout, device>`
    attribute, so that shape, dtype, layout and device are all part of each
    value's type and appear in every IR dump.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let useDefaultAttributePrinterParser = 1;
  // Attributes stay in the attribute dictionary: the frontends build ops
  // generically from (name, operands, attributes).
  let usePropertiesForAttributes = 0;
  let hasConstantMaterializer = 1;
  // `kiln.symbols` on a model function names its size symbols.
  let hasOperationAttrVerify = 1;
}

/// A ranked tensor with a kiln encoding (layout and device).
def Kiln_Tensor : Type<CPred<"::mlir::kiln::isKilnTensorType($_self)">,
                       "ranked tensor with a #kiln.enc encoding",
                       "::mlir::RankedTensorType">;

def Kiln_FloatTensor : Type<And<[Kiln_Tensor.predicate,
    CPred<"::llvm::isa<::mlir::FloatType>(::llvm::cast<::mlir::ShapedType>($_self).getElementType())">]>,
    "floating-point kiln tensor", "::mlir::RankedTensorType">;

def Kiln_BoolTensor : Type<And<[Kiln_Tensor.predicate,
    CPred<"::llvm::cast<::mlir::ShapedType>($_self).getElementType().isInteger(1)">]>,
    "i1 kiln tensor", "::mlir::RankedTensorType">;

def Kiln_IndexTensor : Type<And<[Kiln_Tensor.predicate,
    CPred<"::llvm::cast<::mlir::ShapedType>($_self).getElementType().isInteger(32) || "
          "::llvm::cast<::mlir::ShapedType>($_self).getElementType().isInteger(64)">]>,
    "i32 or i64 kiln tensor", "::mlir::RankedTensorType">;

#endif // KILN_IR_KILNBASE_TD
