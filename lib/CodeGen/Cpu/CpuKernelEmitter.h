//===- CpuKernelEmitter.h - runs of elementwise ops as loops ----*- C++ -*-===//
//
// The first half of the CPU code generator (kiln/CodeGen/CpuCode.h): which
// ops of a step form runs, and each run as a func.func of scf loops over
// arith and math ops on f32 scalars, reading and writing through LLVM
// pointers. CpuObjectEmitter.cpp lowers these to an object file.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CODEGEN_CPU_CPUKERNELEMITTER_H
#define KILN_LIB_CODEGEN_CPU_CPUKERNELEMITTER_H

#include "kiln/Exec/ExecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir {
namespace kiln {

/// How a value read from outside a run maps onto the run's elements, seen
/// as rows x row (row-major): element i of row r reads the value's element
/// r * row + i (full), (r mod R) * row + i for a value of R rows (row: a
/// bias, R = 1, or an attention mask repeating over the heads), r modulo
/// its elements (column: a per-row factor, or NCHW's per-channel one) or 0
/// (scalar); row (r / (G * I)) * I + r mod I for a value holding one block
/// of I rows per group of G blocks (row group: a per-batch attention mask
/// over the heads, [B, 1, 1, S] or [B, 1, S, S] over [B, H, S, S]).
enum class ReadBroadcast { Full, Row, Column, Scalar, RowGroup };

/// Consecutive ops of one step with one result shape: f32 elementwise ops,
/// casts to f32, comparisons and selects, and at most one row reduction
/// (softmax or log_softmax over the last axis, layer_norm) between an
/// elementwise prologue and epilogue. Reshapes and broadcasts of values
/// read from outside the run are views: that value read with their shape.
/// Reads are f32 or integer or boolean values; writes are f32.
struct CpuRun {
  std::vector<Operation *> ops; ///< views included
  Operation *reduction = nullptr; ///< in ops, or null; rows are what it reduces
  std::vector<Value> reads; ///< from outside the run, in first-use order
  std::vector<ReadBroadcast> broadcasts; ///< one per read
  std::vector<int64_t> readElements;     ///< one per read (a column repeats past them)
  /// One per read: a repeating read (row or column) holding one row (one
  /// value) per row of the run, read at the row's index.
  std::vector<bool> perRow;
  /// Step inputs whose elements the compiler knows are all equal: literals.
  std::vector<std::pair<Value, double>> literals;
  std::vector<Value> writes; ///< results used after the run
  int64_t elements = 0, row = 0;
  /// Over symbolic sizes: the element count (`elements` is then a planning
  /// value only); null for a static run.
  AffineExpr symbolicElements;
  /// Over symbolic sizes, repeating reads whose count varies: the kernel
  /// reads count c as reads[countReads[c]]'s elements / countDivisors[c],
  /// from an array the caller passes after the read pointers; countOf
  /// gives each read's count (-1: static).
  std::vector<int> countOf;
  std::vector<size_t> countReads;
  std::vector<int64_t> countDivisors;
  /// Counts evaluated from sizes per run, after those of countReads: a
  /// reduction's symbolic row first (symbolicRow, count rowCount), then
  /// row groups' rows per group and rows inside (groupCountOf).
  std::vector<AffineExpr> countSizes;
  AffineExpr symbolicRow;
  int rowCount = -1;
  /// A reduction's reduced trailing dimensions (its row).
  size_t reducedDims = 0;
  /// One per read: for a row group, the rows of a group (G), the rows
  /// inside it (I: read row (r / (G * I)) * I + r % I) and the run's
  /// dimensions the group spans [groupFrom, groupTo); over symbolic sizes G
  /// and I are two consecutive counts read per run (groupCountOf, -1:
  /// static).
  std::vector<int64_t> groupRows, groupInner;
  std::vector<size_t> groupFrom, groupTo;
  std::vector<int> groupCountOf;
};

/// The runs of `step`, in op order.
std::vector<CpuRun> planCpuRuns(exec::StepOp step);

/// Appends the run's kernel, `symbol` with the C signature of CpuCode.h,
/// and its body `symbol`_body (noalias pointers) at the builder's point.
void emitCpuKernel(OpBuilder &builder, Location loc, const CpuRun &run, StringRef symbol);

/// A kernel's body function: symbol + this suffix.
inline constexpr const char *kCpuKernelBodySuffix = "_body";

/// What the run's code depends on; runs with equal signatures share code.
std::string cpuRunSignature(const CpuRun &run);

} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_CODEGEN_CPU_CPUKERNELEMITTER_H
