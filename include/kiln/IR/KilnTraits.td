//===- KilnTraits.td - families of kiln ops ----------------*- tablegen -*-===//
//
// What each op is, declared with the op (as Arith declares its ops
// ElementwiseMappable): fusion, placement and the kernel emitters read the
// families through kiln/IR/OpClasses.h, which adds what depends on an op's
// types and attributes (a reduction over the trailing axes, an integer
// matmul), and whyNoDeviceCode, the one list of what has device code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNTRAITS_TD
#define KILN_IR_KILNTRAITS_TD

include "mlir/IR/OpBase.td"

/// Each result element depends only on the operand elements at the same
/// (broadcast) index: unary and binary ops, comparisons, select, cast,
/// inference batch norm.
def Kiln_ElementwiseFamily : NativeOpTrait<"kiln::ElementwiseFamily">;

/// Result elements are operand elements found by index arithmetic (reads
/// guarded where an index may fall outside): broadcast, reshape, relayout,
/// transpose, slice, concat, pad, gather, gather_elements.
def Kiln_DataMovementFamily : NativeOpTrait<"kiln::DataMovementFamily">;

/// Each result element is a loop over a window of the input: reductions,
/// argmax, pooling, softmax and log_softmax, scatter_elements.
def Kiln_WindowFamily : NativeOpTrait<"kiln::WindowFamily">;

/// A reduction or normalisation over rows that one block per row computes
/// (when floating point and over the trailing axes): reduce_*, softmax,
/// log_softmax, layer_norm, global_avg_pool.
def Kiln_RowReductionFamily : NativeOpTrait<"kiln::RowReductionFamily">;

#endif // KILN_IR_KILNTRAITS_TD
