//===- KernelGenerator.h - CUDA C++ for the steps of a plan -----*- C++ -*-===//
//
// One kernel per step of an execution plan, written as CUDA C++ text that
// NVRTC compiles for the GPU and the host compiler compiles for cuda-emu.
// One emitter per region kind (lib/CodeGen/*KernelEmitter.cpp); a step no
// emitter handles yet keeps a reason, and runs on the host; a step
// kiln-select-impl gave to a library gets no kernel of its own (a cuDNN
// step with a bias or ReLU gets its epilogue kernel, for when cuDNN has no
// engine for the fused graph).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_KERNELGENERATOR_H
#define KILN_CODEGEN_KERNELGENERATOR_H

#include "kiln/Exec/ExecOps.h"
#include "kiln/Runtime/ConvCall.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace mlir {
namespace kiln {

struct GeneratedKernel {
  unsigned step = 0;         ///< index of the step in program order
  std::string stepName;      ///< "loop(add+relu)"
  std::string kind;          ///< region kind, or the op for an unfused step
  std::string name;          ///< the kernel's extern "C" name, "" if none
  std::string source;        ///< complete CUDA C++ translation unit
  std::string unit;          ///< "CUDA cores" or "Tensor Cores"
  unsigned blockThreads = 0; ///< launch: threads per block
  unsigned gridBlocks = 0;   ///< launch: blocks
  /// launch: dynamic shared memory per block (KILN_DYNAMIC_SHARED), bytes
  unsigned dynamicSharedBytes = 0;
  /// Why there is no kernel (when name is empty); for a library step, why
  /// the library computes it.
  std::string reason;
  /// The library call computing the step instead ("cuBLASLt matmul, ..."),
  /// chosen by kiln-select-impl; empty when none. A cuDNN step may still
  /// have a kernel: its bias/ReLU epilogue, run after the plain convolution
  /// when cuDNN has no engine for the fused graph.
  std::string library;
  /// Why kiln-select-impl chose the generated kernel over a library call
  /// (matmul and convolution steps on GPU targets); empty otherwise.
  std::string whyGenerated;
  /// Parameters: these step inputs (by position; splat constants are
  /// literals in the text), then every step output; with their C types.
  std::vector<uint32_t> inputArgs;
  std::vector<std::string> paramTypes;
  /// Each parameter's tensor size in bytes and element type (a
  /// ::kiln::ref::DType), as the kernel text assumes them (the cuda-emu
  /// device refuses a step whose buffers differ).
  std::vector<int64_t> paramBytes;
  std::vector<int> paramDTypes;
  /// A kernel over symbolic sizes: the sizes it takes after its buffers
  /// (`const long long s<k>`, the symbols' values), its grid as size code
  /// (include/kiln/Reference/SizeCode.h; then gridBlocks is 0), and each
  /// buffer's bytes as size code where they are symbolic (paramBytes -1
  /// there; empty codes for static ones).
  std::vector<AffineExpr> sizeArgs;
  std::vector<int64_t> gridCode;
  std::vector<std::vector<int64_t>> paramByteCodes;
  /// A size class of its step: this kernel serves the runs whose sizes
  /// make `sizeClass` (size code) nonzero, in preference to the step's main
  /// kernel (its entry without a class, which serves every size);
  /// `sizeClassText` says which runs ("rows of at most 1024 elements").
  /// Such an entry follows its step's main entry.
  std::vector<int64_t> sizeClass;
  std::string sizeClassText;
  std::string location;      ///< model file:line of the step's first op
  /// The step's arithmetic per launch (2 per multiply-add), for the
  /// profile's ideal time; and whether it is f16/bf16 work a Tensor Core
  /// could do.
  double flops = 0;
  bool tensorCoreWork = false;
  /// Over symbolic sizes: the FLOPs per launch as size code, evaluated per
  /// signature for the profile (`flops` is then the largest sizes').
  std::vector<int64_t> flopsCode;
  /// Set when an earlier step has the very same kernel (same text but for
  /// its name and model location, same launch): this step launches that
  /// step's kernel, `name` is its name and `source` is empty, so each
  /// distinct kernel is compiled once (a 12-layer encoder has 12 copies of
  /// every layer's kernels).
  int sameAs = -1;
};

struct CodeGenOptions {
  /// f32 matmuls may round their inputs to TF32 on Tensor Cores (10-bit
  /// mantissa; --precision=tf32). Off by default: kiln does not trade
  /// precision for speed without being asked.
  bool allowTf32 = false;
  /// The plan was placed for a GPU (kiln-place ran): a step it left on the
  /// host gets no kernel. (A CPU plan's kernels are generated for the
  /// reports and --emit=cuda.)
  bool placed = false;
  /// The oldest compute capability the kernels must run on (the smallest
  /// --arch): cp.async, ldmatrix and mma.sync m16n8k16 need 80 (below it,
  /// f16 matmuls keep wmma and attention runs on CUDA cores).
  unsigned minArch = 90;
  /// The Tensor Core GEMM's k-slice depth (32 or 64), pipeline stages (2
  /// to 6), blocks per SM (1 or 2) and large block tile width (128 or
  /// 256); 0: kiln's choice (MatmulKernelEmitter.cpp).
  unsigned mmaSliceK = 0, mmaStages = 0, mmaBlocksPerSM = 0, mmaTileN = 0;
  /// The Tensor Core attention kernel's query rows a warp (16 or 32) and
  /// the blocks an SM its registers are bounded for (1 to 4); 0: kiln's
  /// choice.
  unsigned attentionRowsPerWarp = 0, attentionBlocksPerSM = 0;
};

/// A kernel (or a reason) for every step of `plan`.
std::vector<GeneratedKernel> generateKernels(func::FuncOp plan,
                                             const CodeGenOptions &options = {});

/// The elementwise loop kernel for `step`, or a reason in `kernel.reason`.
void emitLoopKernel(exec::StepOp step, GeneratedKernel &kernel);

/// The tiled (shared-memory) transpose kernel when `step` is one transpose
/// that moves the input's last dimension; false (and nothing filled in)
/// for any other step.
bool emitTiledTransposeKernel(exec::StepOp step, GeneratedKernel &kernel);

/// The pooling kernel staging its input rows in shared memory when `step`
/// is one max_pool2d or avg_pool2d of NCHW floats whose rows fit; false
/// (and nothing filled in) for any other step.
bool emitPoolKernel(exec::StepOp step, GeneratedKernel &kernel);

/// The argsort kernel (a rank sort) for a step of one argsort, or a reason.
void emitArgSortKernel(exec::StepOp step, GeneratedKernel &kernel);

/// The row-wise reduction kernel for `step` (a reduction region or one
/// reduction op), or a reason in `kernel.reason`. Over a symbolic row
/// length whose range spans both shapes of the kernel, `kernel` is the one
/// for every length (a block per row) and `classes` gets the one for the
/// short rows (a warp per row), chosen per run.
void emitReductionKernel(exec::StepOp step, GeneratedKernel &kernel,
                         std::vector<GeneratedKernel> &classes);

/// The implicit-GEMM convolution kernel with its fused epilogue for `step`
/// (a conv_epilogue region or one conv2d), or a reason.
void emitConvKernel(exec::StepOp step, GeneratedKernel &kernel);

/// The bias (+ ReLU) epilogue of cuDNN convolution step `step` (described
/// by `call`), in place on its output (nothing when `call` has none).
void emitLibraryEpilogueKernel(exec::StepOp step, const ::kiln::rt::ConvCall &call,
                               GeneratedKernel &kernel);

/// The fused attention kernel for an attention region, or a reason.
void emitAttentionKernel(exec::StepOp step, GeneratedKernel &kernel,
                         const CodeGenOptions &options = {});

/// The tiled matmul kernel with its fused epilogue for `step` (a
/// matmul_epilogue or horizontal region, or one matmul), or a reason.
void emitMatmulKernel(exec::StepOp step, GeneratedKernel &kernel,
                      const CodeGenOptions &options = {});

} // namespace kiln
} // namespace mlir

#endif // KILN_CODEGEN_KERNELGENERATOR_H
