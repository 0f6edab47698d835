//===- TargetAttributes.h - the target facts on the module ------*- C++ -*-===//
//
// The driver records what a module is compiled for as attributes of the
// builtin.module, before any pass runs, so every dump and output says it:
//
//   module attributes {kiln.arch = ["sm_90"], kiln.impl = "auto",
//                      kiln.precision = "tf32", kiln.target = "cuda"} {
//
// kiln.target is always there; the GPU facts (kiln.arch, kiln.precision,
// kiln.impl, kiln.deterministic when set, kiln.workspace_limit,
// kiln.tuning_cache and kiln.emu_sanitize when given, kiln.autotune when
// set) only for --target=cuda and cuda-emu, where they change the result.
// With -O0 a module that already says what it was compiled for keeps it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_TARGETATTRIBUTES_H
#define KILN_DRIVER_TARGETATTRIBUTES_H

#include "kiln/Driver/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"

namespace kiln {
namespace driver {

constexpr llvm::StringLiteral kTargetAttr = "kiln.target";
constexpr llvm::StringLiteral kArchAttr = "kiln.arch";
constexpr llvm::StringLiteral kPrecisionAttr = "kiln.precision";
constexpr llvm::StringLiteral kImplAttr = "kiln.impl";
constexpr llvm::StringLiteral kDeterministicAttr = "kiln.deterministic";
constexpr llvm::StringLiteral kWorkspaceLimitAttr = "kiln.workspace_limit";
constexpr llvm::StringLiteral kTuningCacheAttr = "kiln.tuning_cache";
constexpr llvm::StringLiteral kAutotuneAttr = "kiln.autotune";
constexpr llvm::StringLiteral kEmuSanitizeAttr = "kiln.emu_sanitize";

/// Replaces the module's target facts (those of an earlier compile of a
/// .mlir input included) with those of `options`.
void setTargetAttributes(mlir::ModuleOp module, const CompileOptions &options);

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_TARGETATTRIBUTES_H
