//===- KilnAttrs.td - kiln attributes ----------------------*- tablegen -*-===//

#ifndef KILN_IR_KILNATTRS_TD
#define KILN_IR_KILNATTRS_TD

include "kiln/IR/KilnBase.td"
include "mlir/IR/TensorEncoding.td"
include "mlir/IR/EnumAttr.td"

class Kiln_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Kiln_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Kiln_TensorEncodingAttr : Kiln_Attr<"TensorEncoding", "enc",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "Physical layout and device of a tensor value";
  let description = [{
    The encoding of every kiln tensor type. The tensor's shape is its logical
    shape (for 4-D image tensors the logical order is N, C, H, W); the layout
    says in which order the dimensions are laid out in memory, outermost
    first, and the device says where the buffer lives.

    ```mlir
    tensor<8x16xf32, #kiln.enc<row_major, cpu>>
    tensor<1x3x32x32xf16, #kiln.enc<nhwc, cuda:0>>
    tensor<2x3x4xf32, #kiln.enc<perm[2, 0, 1], cpu>>
    ```

    `row_major` (and its 4-D name `nchw`) is the identity order and is stored
    as an empty `dimOrder`; `nhwc` is the order [0, 2, 3, 1].

    A dynamic dimension (`?`) has a symbolic size: an affine expression over
    the model's size symbols `s0`, `s1`, ... (sums, products, floor and ceil
    division), one per `?` in order. The enclosing function's `kiln.symbols`
    attribute names the symbols and gives their ranges.

    ```mlir
    tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
    tensor<?x768xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "memory order of dimensions, outermost first; empty means row-major">:$dimOrder,
    "::mlir::kiln::DeviceKind":$deviceKind,
    "int64_t":$deviceOrdinal,
    ArrayRefParameter<"::mlir::AffineExpr", "symbolic sizes of the dynamic dimensions, in order">:$sizes);
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<int64_t>":$dimOrder,
                     "::mlir::kiln::DeviceKind":$deviceKind,
                     "int64_t":$deviceOrdinal), [{
      return $_get($_ctxt, dimOrder, deviceKind, deviceOrdinal,
                   ::llvm::ArrayRef<::mlir::AffineExpr>{});
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True for the identity (row-major) order.
    bool isRowMajor() const { return getDimOrder().empty(); }
    /// The device as written in the IR: "cpu" or "cuda:N".
    std::string getDeviceString() const;
    /// The layout as written in the IR: row_major, nhwc or perm[...].
    std::string getLayoutString() const;
    /// Same layout and sizes on another device.
    TensorEncodingAttr withDevice(DeviceKind kind, int64_t ordinal) const;
    /// The same layout and device with other symbolic sizes.
    TensorEncodingAttr withSizes(::llvm::ArrayRef<::mlir::AffineExpr> sizes) const;
  }];
}

/// What a `kiln.fusion` region computes; later lowering picks one kernel
/// emitter (or library call) per kind.
def Kiln_FusionKindAttr : I32EnumAttr<"FusionKind", "kind of a fusion region", [
  I32EnumAttrCase<"Loop", 0, "loop">,
  I32EnumAttrCase<"Reduction", 1, "reduction">,
  I32EnumAttrCase<"MatmulEpilogue", 2, "matmul_epilogue">,
  I32EnumAttrCase<"ConvEpilogue", 3, "conv_epilogue">,
  I32EnumAttrCase<"Horizontal", 4, "horizontal">,
  I32EnumAttrCase<"Attention", 5, "attention">]> {
  let cppNamespace = "::mlir::kiln";
}

#endif // KILN_IR_KILNATTRS_TD
