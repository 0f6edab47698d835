//===- SelectImplementations.cpp - library call or generated kernel -------===//

#include "kiln/IR/SymbolicSizes.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/IR/OpClasses.h"
#include "kiln/Lowering/CostModel.h"
#include "kiln/Lowering/LibraryCalls.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Lowering/TuningCache.h"

#include "mlir/IR/Builders.h"

#include <cstdio>

namespace mlir {
namespace kiln {
#define GEN_PASS_DEF_KILNSELECTIMPLEMENTATIONS
#include "kiln/Lowering/Passes.h.inc"
} // namespace kiln
} // namespace mlir

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

std::string microseconds(double us) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f us", us);
  return buffer;
}

/// Which steps this pass decides: those whose work is a matmul or a
/// convolution, the two ops vendor libraries cover.
enum class StepClass { Other, Matmul, Conv };

StepClass classify(exec::StepOp step) {
  // A library call runs on the GPU: a step left on the host runs there.
  if (exec::runsOnHost(step))
    return StepClass::Other;
  if (std::optional<StringRef> kind = step.getKind()) {
    if (*kind == "matmul_epilogue" || *kind == "horizontal")
      return StepClass::Matmul;
    if (*kind == "conv_epilogue")
      return StepClass::Conv;
    return StepClass::Other;
  }
  // Integer matmuls and convolutions are per-element loops (isWindowOp).
  Operation &first = step.getBody().front().front();
  if (llvm::isa<MatMulOp>(first) && !isWindowOp(&first))
    return StepClass::Matmul;
  if (llvm::isa<Conv2dOp>(first) && !isWindowOp(&first))
    return StepClass::Conv;
  return StepClass::Other;
}

struct KilnSelectImplementationsPass
    : public ::mlir::kiln::impl::KilnSelectImplementationsBase<KilnSelectImplementationsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (precision != "strict" && precision != "tf32") {
      func.emitError("precision must be strict or tf32, not '") << precision << "'";
      return signalPassFailure();
    }
    if (impl != "auto" && impl != "library" && impl != "generated") {
      func.emitError("impl must be auto, library or generated, not '") << impl << "'";
      return signalPassFailure();
    }
    // 10 (sm_10) to 999, as kilnc's --arch; the cost model takes an int.
    if (arch < 10 || arch > 999) {
      func.emitError("arch must be a compute capability such as 90, not ") << static_cast<int64_t>(arch);
      return signalPassFailure();
    }
    if (workspaceLimit < -1) {
      func.emitError("workspace-limit must be -1 (the GPU's recommended size) or a byte count, "
                     "not ")
          << static_cast<int64_t>(workspaceLimit);
      return signalPassFailure();
    }
    const GpuSpec &gpu = gpuSpecFor(static_cast<int>(arch));
    std::optional<TuningCache> measured;
    if (!tuningCache.empty()) {
      std::string error;
      measured = TuningCache::load(tuningCache, error);
      if (!measured) {
        func.emitError("tuning cache: ") << error;
        return signalPassFailure();
      }
    }
    Builder b(&getContext());
    func.walk([&](exec::StepOp step) {
      StepClass cls = classify(step);
      if (cls == StepClass::Other)
        return;
      auto decide = [&](StringRef choice, const std::string &reason) {
        step->setAttr(kImplAttr, b.getStringAttr(choice));
        step->setAttr(kImplReasonAttr, b.getStringAttr(reason));
      };
      if (impl == "generated")
        return decide("generated", "--impl=generated");
      if (cls == StepClass::Conv)
        return decideConv(step, gpu, decide);
      GemmMatch match = matchCublasLtGemm(step, precision == "tf32");
      if (!match.ok)
        return decide("generated", "not one cuBLASLt call: " + match.reason);
      if (touchesSymbolicSizes(step)) {
        // Both take their sizes per run, but the library picks its
        // algorithm per size where kiln's kernel fixes its tiles for the
        // largest (and no estimate compares them at every size).
        setGemm(step, match);
        return decide("cublaslt", std::string(kSymbolicReason));
      }
      GemmEstimate cost = estimateGemm(gpu, match.problem);
      std::string estimate = "cuBLASLt " + microseconds(cost.libraryUs) + ", generated " +
                             microseconds(cost.generatedUs) + " on " + gpu.name +
                             " (cost model)";
      if (const TunedTimes *times =
              measured ? measured->find(TuningCache::keyOf(static_cast<int>(arch), match.call))
                       : nullptr) {
        cost.libraryUs = times->libraryUs;
        cost.generatedUs = times->generatedUs;
        estimate = "cuBLASLt " + microseconds(cost.libraryUs) + ", generated " +
                   microseconds(cost.generatedUs) + " measured on sm_" + std::to_string(arch) +
                   " (tuning cache)";
      }
      if (impl == "auto" && cost.libraryUs >= cost.generatedUs)
        return decide("generated", estimate);

      setGemm(step, match);
      decide("cublaslt", impl == "library" ? "--impl=library; " + estimate : estimate);
    });
  }

  static constexpr const char *kSymbolicReason =
      "its sizes are known only at run time, and the library picks its algorithm per run";

  void setGemm(exec::StepOp step, const GemmMatch &match) {
    ::kiln::rt::GemmCall call = match.call;
    call.deterministic = deterministic;
    call.workspaceBytes = workspaceFor(gpuSpecFor(static_cast<int>(arch)), match.problem);
    step->setAttr(kGemmAttr, gemmCallToAttr(&getContext(), call, match.sizes));
  }

  template <typename Decide>
  void decideConv(exec::StepOp step, const GpuSpec &gpu, Decide decide) {
    ConvMatch match = matchCudnnConv(step, precision == "tf32");
    if (!match.ok)
      return decide("generated", "not one cuDNN graph: " + match.reason);
    bool symbolic = touchesSymbolicSizes(step);
    GemmEstimate cost = estimateGemm(gpu, match.problem);
    std::string estimate = "cuDNN " + microseconds(cost.libraryUs) + ", generated " +
                           microseconds(cost.generatedUs) + " on " + gpu.name + " (cost model)";
    // kiln generates f32 convolutions only.
    bool generatedExists = match.call.type == ::kiln::ref::DType::F32;
    if (generatedExists && !symbolic && impl == "auto" && cost.libraryUs >= cost.generatedUs)
      return decide("generated", estimate);
    ::kiln::rt::ConvCall call = match.call;
    call.deterministic = deterministic;
    call.workspaceBytes = workspaceFor(gpu, match.problem);
    step->setAttr(kConvAttr, convCallToAttr(&getContext(), call, match.sizes));
    decide("cudnn", symbolic           ? std::string(kSymbolicReason)
                    : !generatedExists ? "kiln generates f32 convolutions only; cuDNN computes "
                                         "this one"
                    : impl == "library" ? "--impl=library; " + estimate
                                        : estimate);
  }

  /// Workspace lets cuBLASLt split K across blocks: a few partial results
  /// of the output, capped by the GPU's recommended size and the user's
  /// limit.
  uint64_t workspaceFor(const GpuSpec &gpu, const GemmProblem &p) const {
    uint64_t partials = 4 * 4 * static_cast<uint64_t>(p.m * p.n * p.batch);
    uint64_t wanted = std::max(kMiB, (partials + kMiB - 1) / kMiB * kMiB);
    uint64_t limit = workspaceLimit < 0 ? gpu.defaultWorkspace
                                        : static_cast<uint64_t>(workspaceLimit);
    return std::min({wanted, gpu.defaultWorkspace, limit});
  }
};

} // namespace
