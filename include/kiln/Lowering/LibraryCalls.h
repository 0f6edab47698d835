//===- LibraryCalls.h - steps a vendor library can compute ------*- C++ -*-===//
//
// Recognizes the steps cuBLASLt can compute in one call (a matmul with an
// epilogue it has) and writes the call's descriptor, in cuBLASLt's
// column-major terms, as the `gemm` attribute of the step; and the
// convolution steps cuDNN can compute in one operation graph (`conv`).
// The executable writer serializes the same descriptors; the runtime's
// GemmCall and ConvCall are their MLIR-free twins.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_LIBRARYCALLS_H
#define KILN_LOWERING_LIBRARYCALLS_H

#include "kiln/Exec/ExecOps.h"
#include "kiln/Lowering/CostModel.h"
#include "kiln/Runtime/ConvCall.h"
#include "kiln/Runtime/GemmCall.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <string>

namespace mlir {
namespace kiln {

/// Attributes the implementation choice sets on a step.
constexpr llvm::StringLiteral kImplAttr = "impl"; ///< "cublaslt" | "cudnn" | "generated"
constexpr llvm::StringLiteral kImplReasonAttr = "impl_reason";
constexpr llvm::StringLiteral kGemmAttr = "gemm";          ///< the cuBLASLt descriptor
constexpr llvm::StringLiteral kConvAttr = "conv";          ///< the cuDNN descriptor
/// Set by kiln-assign-buffers on steps with a library workspace.
constexpr llvm::StringLiteral kWorkspaceOffsetAttr = "workspace_offset";

struct GemmMatch {
  bool ok = false;
  std::string reason;          ///< why not, when !ok
  ::kiln::rt::GemmCall call;   ///< when ok (workspace not yet set)
  /// Over symbolic sizes: each size's expression in rt::kGemmSizeFields'
  /// order, null where static (`call` holds the number; 0 where symbolic);
  /// empty when all are static.
  SmallVector<AffineExpr> sizes;
  GemmProblem problem;         ///< for the cost model (at the largest sizes), when ok
};

/// Whether `step` (one matmul, or a matmul_epilogue region) is one cuBLASLt
/// call: D = epilogue(alpha * A*B + beta * C + bias), and if so the call.
/// With `allowTf32`, f32 inputs may be rounded to TF32.
GemmMatch matchCublasLtGemm(exec::StepOp step, bool allowTf32);

struct ConvMatch {
  bool ok = false;
  std::string reason;          ///< why not, when !ok
  ::kiln::rt::ConvCall call;   ///< when ok (workspace not yet set)
  /// As GemmMatch::sizes, in rt::kConvSizeFields' order.
  SmallVector<AffineExpr> sizes;
  GemmProblem problem;         ///< the implicit GEMM, for the cost model
};

/// Whether `step` (one conv2d, or a conv_epilogue region) is one cuDNN
/// operation graph: y = relu?(conv(x, w) + bias), NCHW.
ConvMatch matchCudnnConv(exec::StepOp step, bool allowTf32);

DictionaryAttr convCallToAttr(MLIRContext *context, const ::kiln::rt::ConvCall &call,
                              ArrayRef<AffineExpr> sizes = {});
FailureOr<::kiln::rt::ConvCall> convCallFromAttr(DictionaryAttr attr, std::string &error);

/// The descriptor as an attribute, and back (failing with a message on a
/// malformed attribute).
DictionaryAttr gemmCallToAttr(MLIRContext *context, const ::kiln::rt::GemmCall &call,
                              ArrayRef<AffineExpr> sizes = {});
/// Over symbolic sizes, a descriptor carries `symbolic`: its sizes known
/// per run by field name (`names`: rt::kGemmSizeFields or
/// rt::kConvSizeFields), whose numbers are 0. Each size's expression in
/// the names' order, null where static; empty when none is symbolic.
SmallVector<AffineExpr> symbolicCallSizes(DictionaryAttr call, ArrayRef<const char *> names);
FailureOr<::kiln::rt::GemmCall> gemmCallFromAttr(DictionaryAttr attr, std::string &error);

} // namespace kiln
} // namespace mlir

#endif // KILN_LOWERING_LIBRARYCALLS_H
