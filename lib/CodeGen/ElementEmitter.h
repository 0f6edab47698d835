//===- ElementEmitter.h - CUDA expressions for elementwise graph ops -*- C++ -*-===//
//
// Shared by the emitters: given a step's body, writes the statements that
// compute one element of a value at a given index (one expression per
// dimension), recursively through elementwise ops, broadcasts, row-major
// reshapes and inference batch norm down to loads of the step's inputs.
// Each value is computed once per distinct index within a scope.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CODEGEN_ELEMENTEMITTER_H
#define KILN_LIB_CODEGEN_ELEMENTEMITTER_H

#include "kiln/Exec/ExecOps.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Value.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace kiln {

/// A C literal of `value`: "1.25f" for float, "1.25" for double.
std::string cudaLiteral(double value, bool isDouble);

/// A size as a C expression over the kernel's size parameters (`s0`,
/// `s1`, ..., one per size symbol the step uses): "128LL", "(s0 * 64LL)".
/// Divisions and remainders floor, as the runtime evaluates sizes (C's
/// own where the dividend is never negative, else kiln_floordiv_size).
std::string sizeText(AffineExpr size);

/// The size symbols the types in `step` use, in order: the parameters a
/// kernel over symbolic sizes takes after its buffers.
std::vector<unsigned> sizeSymbolsOf(exec::StepOp step);

class ElementEmitter {
public:
  /// `failure` receives the first reason code cannot be generated.
  ElementEmitter(exec::StepOp step, std::string &failure) : step(step), failure(failure) {}

  /// The expression (a variable or a literal) for `value` at `index`.
  std::string valueAt(Value value, const std::vector<std::string> &index);
  /// Makes `value` at `index` read as `expr` (e.g. a reduction's result).
  void seed(Value value, const std::vector<std::string> &index, const std::string &expr);
  /// The statements written since the last call; starts a new scope.
  std::vector<std::string> takeLines();

  /// The C type `type`'s elements are computed in ("float", "double",
  /// "bool"), or nothing (with a failure reason).
  std::optional<std::string> scalarType(Type type);
  /// The C type `type`'s elements are stored as ("__half" for f16, ...).
  std::optional<std::string> storageType(Type type);
  /// `expr`, a stored element of `type`, as its computed type, and back.
  static std::string load(Type type, const std::string &expr);
  static std::string store(Type type, const std::string &expr);
  static bool isNarrowFloat(Type type);
  /// Integers other than i1 (computed as long long).
  static bool isInteger(Type type);
  /// A literal of `type`'s computed type: 0, or `value` (integers truncate).
  static std::string zeroOf(Type type);
  static std::string literalOf(Type type, double value);
  /// "#include <cuda_fp16.h>" (and bf16) when `step` touches those types.
  static std::string includesFor(exec::StepOp step);
  /// True when the emitter can compute `op`'s elements.
  bool supported(Operation *op);
  /// knownSplat(value) as a double, if a double holds it exactly: the
  /// kernel takes it as a literal, not as a parameter.
  static std::optional<double> splatOf(Value value);
  static std::vector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> dims);
  /// The same over symbolic sizes (constants where the sizes are static).
  static std::vector<AffineExpr> rowMajorStrides(llvm::ArrayRef<AffineExpr> dims,
                                                 MLIRContext *context);
  /// Element stride of each logical dimension in memory, by the type's
  /// layout (row-major, nhwc, perm[...]), symbolic where sizes are.
  static std::vector<AffineExpr> physicalStrideSizes(RankedTensorType type);
  /// "index * stride" as C (just `index` for a stride of 1).
  static std::string scaled(const std::string &index, AffineExpr stride);
  /// Index of an operand broadcast (NumPy rules) to a result at `index`.
  static std::vector<std::string> broadcastIndex(Value operand,
                                                 const std::vector<std::string> &index);
  /// Decomposes `linear` (a row-major position in `dims`) into one index
  /// expression per dimension ("0LL" for size-1 dimensions), declaring
  /// variables <prefix>0, <prefix>1, ... in `lines`; symbolic sizes are
  /// their C expressions (sizeText).
  static std::vector<std::string> decompose(llvm::ArrayRef<AffineExpr> dims,
                                            const std::string &linear, const std::string &prefix,
                                            std::vector<std::string> &lines);
  /// Where the matrix of a batched operand starts: its batch dimensions
  /// broadcast (NumPy) against the result's, given the result's batch index.
  static std::string batchOffset(RankedTensorType operand,
                                 const std::vector<std::string> &resultBatchIndex);
  void fail(const std::string &why) {
    if (failure.empty())
      failure = why;
  }

private:
  /// A variable holding `expr`; integers narrower than 64 bits wrapped to
  /// their width unless `wrap` is false.
  std::string fresh(Value value, const std::string &expr, bool wrap = true);
  /// A mutable variable `<prefix>N` of C type `type` set to `init`.
  std::string declare(const std::string &type, const std::string &prefix, const std::string &init);
  /// Runs `computeInside` with its statements collected in `inside` (to be
  /// placed in a loop or branch) and its memo forgotten afterwards.
  std::string scoped(const std::function<std::string()> &computeInside,
                     std::vector<std::string> &inside);
  /// `body` under `headers` ("for (...)", "if (...)"), outermost first,
  /// each a brace block, indented.
  void emitBlocks(const std::vector<std::string> &headers, std::vector<std::string> body);
  std::string compute(Value value, const std::vector<std::string> &index);
  /// An integer op's expression (wrapping, as the reference computes).
  std::string integerExpression(Operation *op,
                                const std::function<std::string(unsigned)> &operand);
  /// slice, pad, concat, gather, gather_elements: index arithmetic, with
  /// reads guarded where an index may fall outside the input.
  std::string moveData(Value value, const std::vector<std::string> &index);
  /// Reductions, argmax and pooling: a loop over the element's window.
  std::string reduceWindow(Value value, const std::vector<std::string> &index);

  exec::StepOp step;
  std::string &failure;
  std::vector<std::string> lines;
  std::map<std::pair<const void *, std::string>, std::string> computed;
  unsigned next = 0;
};

struct GeneratedKernel;

/// What every kernel's text starts with: KILN_SHARED and KILN_SHARED_ALIGNED
/// for NVRTC (cuda_emu.h defines them for the emulator).
const char *kernelPrelude();

/// The prelude plus the block reduction shared by the reduction and
/// attention kernels (guarded, so a translation unit may hold several):
/// kiln_block_reduce(v, scratch, op, identity) and kiln_warp_reduce(v, op)
/// with ops KilnSum, KilnProd, KilnMax and KilnMin (the last two propagate
/// NaN).
const char *blockReduceHelpers();

/// The definitions of the integer helpers (kiln_div_i64, kiln_f2i, ...)
/// that `source` calls.
std::string integerHelpersFor(const std::string &source);

/// The kernel's parameters for `step` ("const float *__restrict__ in0",
/// ...; splat constants are literals, not parameters), recording them in
/// `kernel.inputArgs` and `kernel.paramTypes`. Fails (kernel.reason) on an
/// input that is not row-major (unless only layout conversions read it), on
/// an output that is not row-major (unless the caller stores by layout:
/// `anyOutputLayout`), or on an unsupported type.
std::vector<std::string> kernelParameters(exec::StepOp step, ElementEmitter &elements,
                                          GeneratedKernel &kernel, bool anyOutputLayout = false);

/// Appends the size parameters of a kernel over symbolic sizes to `params`
/// (`const long long s<k> /* name */`, sizeSymbolsOf) and records them in
/// `kernel.sizeArgs`; nothing for a step of static shapes. kernelParameters
/// calls it after the buffers.
void appendSizeParameters(exec::StepOp step, GeneratedKernel &kernel,
                          std::vector<std::string> &params);

} // namespace kiln
} // namespace mlir

#endif // KILN_LIB_CODEGEN_ELEMENTEMITTER_H
