//===- CpuCode.h - native code for a plan's host steps ----------*- C++ -*-===//
//
// --target=cpu compiles the runs of elementwise ops inside each step (a
// matmul's epilogue, a residual add before a layer norm, GELU's erf, an
// attention mask's compare and select, an int8 weight's dequantisation) to
// native loops: each run becomes one MLIR function of scf loops over arith
// and math ops, lowered to the LLVM dialect, optimised and vectorised by
// LLVM for the CPU and emitted in-process by LLVM's TargetMachine as an ELF
// relocatable object. The runtime links that object itself
// (lib/Runtime/CpuObject.cpp): no compiler or linker on the user's machine.
// The other ops of a step (library GEMMs, reductions, data movement) run
// on the runtime's kernels as before.
//
// Every kernel has one C signature,
//
//   void kernel(const void *const *reads, float *const *writes,
//               int64_t begin, int64_t end);
//
// and computes elements [begin, end) of its run's results, in row-major
// order, so the runtime can split a run over threads anywhere.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPUCODE_H
#define KILN_CODEGEN_CPUCODE_H

#include "kiln/Runtime/CpuLevels.h"
#include "kiln/Target/ExecutableWriter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace mlir {
namespace kiln {

/// Whether `name` is one of the levels (kiln/Runtime/CpuLevels.h).
bool isCpuLevel(llvm::StringRef name);

/// The highest level this machine's CPU has ("x86-64-v4" on a CPU with
/// AVX-512), as LLVM reads the host's features.
std::string hostCpuLevel();

struct CpuCodeOptions {
  /// The level to build for besides the baseline (--cpu; "native" is the
  /// host's level); "x86-64" builds the baseline alone.
  std::string level = "native";
};

/// Plans and compiles the CPU kernels of `plan` (a function lowered to
/// steps): fills code.cpuKernels and appends the objects (one for the level,
/// one for the baseline) to code.blobs. Fails with `error` set only on an
/// internal error or an unknown level; steps without runs get no kernels.
LogicalResult buildCpuCode(func::FuncOp plan, const CpuCodeOptions &options, DeviceCode &code,
                           std::string &error);

/// --emit=cpu-mlir: prints the distinct kernels of `plan` as they are
/// before lowering, each function annotated with the ops it fuses
/// (kiln.ops), their model locations and its row split.
LogicalResult writeCpuKernels(func::FuncOp plan, llvm::raw_ostream &os);

} // namespace kiln
} // namespace mlir

#endif // KILN_CODEGEN_CPUCODE_H
