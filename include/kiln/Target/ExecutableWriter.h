//===- ExecutableWriter.h - execution plan to .kx ---------------*- C++ -*-===//

#ifndef KILN_TARGET_EXECUTABLEWRITER_H
#define KILN_TARGET_EXECUTABLEWRITER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace mlir {
namespace kiln {

/// A step's generated kernel and its launch.
struct StepKernel {
  std::string name;
  unsigned grid = 1, block = 1;
  unsigned dynamicShared = 0; ///< bytes of dynamic shared memory per block
  std::vector<uint32_t> inputs; ///< step inputs passed, then every output
  /// Over symbolic sizes: the sizes passed after the buffers, and the grid
  /// as size code (then `grid` is not written).
  std::vector<AffineExpr> sizes;
  std::vector<int64_t> gridCode;
  /// Kernels for size classes of the step: each serves the runs whose sizes
  /// make `when` nonzero (the first that does), the step's own the rest.
  struct SizeClass {
    std::vector<int64_t> when;
    std::string name;
    unsigned block = 1, dynamicShared = 0;
    std::vector<int64_t> gridCode;
    std::vector<AffineExpr> sizes;
  };
  std::vector<SizeClass> classes;
};

/// A run of a host step's ops compiled for the CPU (kiln/CodeGen/CpuCode.h):
/// `opCount` ops of the step from `firstOp`, computed by `symbol`. The
/// writer numbers the ops and values as the executable does.
struct CpuKernel {
  std::string symbol;
  Operation *firstOp = nullptr;
  unsigned opCount = 0;
  /// Values of the step (its block arguments or its ops' results) the
  /// kernel reads (row-major, f32 or an integer or boolean type: recorded
  /// with each read's dtype) and writes (f32 row-major).
  std::vector<Value> reads, writes;
  /// Elements of each written value.
  int64_t elements = 0;
  /// The kernel's ranges start and end at multiples of this (a reduction's
  /// rows; 1 for elementwise runs).
  int64_t row = 1;
  /// Over symbolic sizes, the element count (then `elements` is ignored).
  AffineExpr elementsSize;
  /// Counts the kernel reads at run time: reads[countReads[c]]'s elements
  /// divided by countDivisors[c], passed after the read pointers.
  std::vector<size_t> countReads;
  std::vector<int64_t> countDivisors;
  /// Counts evaluated from sizes, after those: a reduction's symbolic row
  /// first, then row groups' rows per group and rows inside.
  std::vector<AffineExpr> countSizes;
  /// A reduction's row over symbolic sizes (then `row` is ignored).
  AffineExpr rowSize;
};

/// A blob of compiled kernels ("sm_90"/"cubin", "cuda-emu"/"elf-so",
/// "x86-64-v3"/"elf-rel", ...).
struct DeviceCodeBlob {
  std::string target, format, data;
};

struct DeviceCode {
  std::map<unsigned, StepKernel> kernels; ///< by step index
  std::map<unsigned, std::vector<CpuKernel>> cpuKernels; ///< by step index, in op order
  std::vector<DeviceCodeBlob> blobs;
  /// The host's library calls must give the same bits on any thread count
  /// (--deterministic on --target=cpu).
  bool deterministic = false;
};

/// Serializes a function lowered to an execution plan (steps with streams,
/// events and offsets) into a .kx file, with the device code and the steps'
/// kernels when given. The output depends only on its inputs, so the same
/// model always gives the same bytes. Reports errors on the offending op.
LogicalResult writeExecutable(func::FuncOp func, llvm::raw_ostream &os,
                              const DeviceCode &code = {});

} // namespace kiln
} // namespace mlir

#endif // KILN_TARGET_EXECUTABLEWRITER_H
