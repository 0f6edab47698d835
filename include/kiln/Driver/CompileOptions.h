//===- CompileOptions.h - what kilnc compiles, for what ---------*- C++ -*-===//
//
// One struct holds every choice that changes how a model is compiled: the
// target and its facts, the pipeline's switches, the plan's trade-off and
// what to show on the way. kilnc's flags fill it and the driver reads only
// it, so a new compile flag (--no-host-fallback, shape ranges, --train)
// adds a field here, a check in verifyCompileOptions and one cl::opt.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_COMPILEOPTIONS_H
#define KILN_DRIVER_COMPILEOPTIONS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace driver {

/// The device the executable runs on.
enum class Target { CPU, CudaEmu, Cuda };

/// What generated kernels may round.
enum class Precision { Strict, Tf32 };

/// How matmul steps are computed on a GPU target.
enum class Implementation { Auto, Library, Generated };

/// The trade-off of the execution plan.
enum class Schedule { MaxConcurrency, MinMemory };

struct CompileOptions {
  // The target. Everything but `target` applies to the GPU targets only.
  Target target = Target::CPU;
  /// --target=cpu: the x86-64 level of the native code ("native": this
  /// machine's; kiln/CodeGen/CpuCode.h).
  std::string cpuLevel = "native";
  /// Architectures kernels are compiled for (sm_XX); the first one is
  /// what implementation choices are made for.
  std::vector<std::string> archs = {"sm_90", "sm_80"};
  Precision precision = Precision::Strict;
  Implementation implementation = Implementation::Auto;
  /// The Tensor Core GEMM's pipeline (--mma-pipeline K,STAGES,BLOCKS[,N]):
  /// the depth of a k-slice, the slices in flight, the blocks an SM must
  /// hold (registers bounded to fit) and the block tile's width (128, or
  /// 256 for warp tiles of 64x64); 0: kiln's choice. A tuning aid
  /// (scripts/gpu-check times variants).
  unsigned mmaSliceK = 0, mmaStages = 0, mmaBlocksPerSM = 0, mmaTileN = 0;
  /// The Tensor Core attention kernel's query rows a warp and blocks an SM
  /// (--attention-tile ROWS,BLOCKS); 0: kiln's choice. A tuning aid too.
  unsigned attentionRowsPerWarp = 0, attentionBlocksPerSM = 0;
  /// Only implementations with bitwise reproducible results.
  bool deterministic = false;
  /// Refuse to compile when an op would run on the host (kiln-place's
  /// no-host-fallback), listing every such op.
  bool noHostFallback = false;
  /// Ops (by name, e.g. "softmax") kept on the host whatever their device
  /// code (kiln-place's host-ops).
  std::vector<std::string> hostOps;
  /// Most bytes of workspace a library call may use; -1: the GPU's
  /// recommended size.
  int64_t workspaceLimit = -1;
  /// Measured times that decide matmul steps (kilnc --tuning-cache).
  std::string tuningCache;
  /// Measure matmul steps on GPU 0 first and record them in tuningCache.
  bool autotune = false;
  /// Sanitizers the cuda-emu kernels are built with ("" for none).
  std::string emuSanitize;
  /// Build the cuda-emu kernels for kiln-run --profile: loads and stores
  /// traced, sm_90 resources from NVRTC recorded.
  bool emuProfile = false;

  // The graph pipeline.
  /// --grad=LOSS: differentiate the output LOSS (kiln-grad) with respect to
  /// the trainable weights, those whose names --trainable matches.
  std::string gradLoss;
  std::string trainable = ".*";
  /// --train=LOSS: a training step (kiln-optimizer after kiln-grad, whose
  /// loss gradLoss then names): the weights and optimizer state become
  /// states the runtime keeps.
  bool train = false;
  std::string optimizer = "sgd";
  double learningRate = 0.01;
  double weightDecay = 0.0;
  /// --memory-budget=F (with --grad or --train): kiln-remat's budget, the
  /// most bytes saved for the backward pass as a fraction of those saved
  /// recomputing nothing (1); unset, every forward value it reads is saved.
  std::optional<double> memoryBudget;
  /// false (-O0): stop after parsing.
  bool optimize = true;
  bool fusion = true;
  /// What constant folding may spend (kiln-constant-fold's budget).
  double foldBudgetSeconds = 60.0;
  int64_t foldBudgetBytes = int64_t(4) << 30;

  // The execution plan.
  /// Lower the optimised graph to a plan (plans, executables, kernels).
  bool lower = false;
  Schedule schedule = Schedule::MaxConcurrency;
  /// Most streams of the plan; none: the target's (planOptions).
  std::optional<int64_t> maxStreams;

  // Seeing what happened.
  /// Every fusion decision and the regions per kind, on stderr.
  bool fusionReport = false;
  /// Every step's kernel compiled with NVRTC: registers, memory, spills.
  bool kernelReport = false;
  /// The IR after parsing and after every pass, on stderr.
  bool printIrAfterAll = false;
  /// Where to write DIR/NN-<pass>.mlir after every pass ("" for nowhere).
  std::string dumpIrDir;
  /// Literals with more elements than this are elided in the files of
  /// dumpIrDir; std::nullopt keeps them whole (the dumps read back).
  std::optional<unsigned> dumpElideLimit;
  /// Likewise for printIrAfterAll's stderr (kilnc elides above 16 there
  /// when stderr is a terminal).
  std::optional<unsigned> printElideLimit;
  /// Where to write the optimised graph as Graphviz DOT ("" for nowhere).
  std::string dumpDot;
};

/// The compute capability of "sm_XX" (10 to 999), or std::nullopt.
std::optional<unsigned> parseArch(llvm::StringRef arch);

/// Bytes with an optional KiB, MiB or GiB suffix, at most 2^40; or
/// std::nullopt.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

/// The text of each enum as the flags and the module attributes spell it.
llvm::StringRef stringifyTarget(Target target);
llvm::StringRef stringifyPrecision(Precision precision);
llvm::StringRef stringifyImplementation(Implementation implementation);

/// Checks that the options make sense together; on failure returns the
/// message kilnc prints after "kilnc: error: ", else "".
std::string verifyCompileOptions(const CompileOptions &options);

} // namespace driver
} // namespace kiln

#endif // KILN_DRIVER_COMPILEOPTIONS_H
