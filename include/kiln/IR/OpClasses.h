//===- OpClasses.h - families of kiln ops and their device code -*- C++ -*-===//
//
// One definition of which family each op belongs to and which device code
// computes it, shared by fusion (what a region may hold), placement (what
// runs on the device, and why not) and the kernel emitters (what they
// generate), so the three cannot drift apart. The families are op traits
// declared with the ops (KilnTraits.td); these functions add what depends
// on an op's types and attributes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_OPCLASSES_H
#define KILN_IR_OPCLASSES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir {
namespace kiln {

/// Unary and binary ops, comparisons, select, cast, and inference batch
/// normalisation (a per-channel affine map): each result element depends
/// only on the operand elements at the same (broadcast) index.
bool isElementwiseOp(Operation *op);

/// Reductions and row-wise normalisations that one block per row computes:
/// reduce_sum/mean/max/min/prod, softmax, log_softmax, layer_norm,
/// global_avg_pool.
bool isRowReductionOp(Operation *op);

/// A row reduction the block-per-row kernel computes: floating point, over
/// the trailing axes. (Others that have device code are per-element ops.)
bool hasRowReductionKernel(Operation *op);

/// Reductions over any axes, argmax, pooling, softmax and log_softmax over
/// any axis, scatter_elements, integer and f64 matmuls and convolutions: each output
/// element is a loop over its window of the input.
bool isWindowOp(Operation *op);

/// Ops whose result the element emitter computes one element at a time, by
/// index arithmetic and small loops: the elementwise ops; data movement
/// (broadcast, reshape, relayout, transpose, slice, concat, pad, gather,
/// gather_elements); and windows (isWindowOp), each output element a loop
/// over its window.
bool isPerElementOp(Operation *op);

/// Ops whose device code takes its sizes as kernel arguments, so that one
/// kernel serves every size of symbolic shapes: the elementwise ops and
/// the data movement that is index arithmetic over the sizes (broadcast,
/// reshape, transpose, relayout; slices, gathers and concats whose index
/// arithmetic needs only static extents), pooling over a symbolic
/// batch, float reductions over any axes, the row reductions of the
/// reduction kernel, and the float matmuls and convolutions (cuBLASLt and
/// cuDNN take sizes per run; kiln's convolution kernel a symbolic batch).
/// Over symbolic sizes the others run on the host so far.
bool hasDeviceCodeOverSymbolicSizes(Operation *op);

/// Why `op`, with its element types and attributes, has no device code
/// (generated kernel or library call), or "" when it has.
std::string whyNoDeviceCode(Operation *op);

/// The elements of `value` when the compiler knows they are all equal: a
/// splat constant, or a weight of one element (an exporter's scalar
/// initializer, e.g. attention's 1/sqrt(d)); null otherwise. Kernels take
/// the value as a literal, library calls as a factor, attention fusion as
/// the scale. (Larger splat weights stay buffers.)
DenseElementsAttr knownSplat(Value value);

} // namespace kiln
} // namespace mlir

#endif // KILN_IR_OPCLASSES_H
