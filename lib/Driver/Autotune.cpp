//===- Autotune.cpp - measure library calls against generated kernels -----===//

#include "kiln/Driver/Autotune.h"

#include "kiln/Driver/Compilation.h"

#include "kiln/Lowering/LibraryCalls.h"
#include "kiln/Runtime/Runtime.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

namespace kiln {
namespace driver {

namespace {

constexpr int kWarmupRuns = 3;
constexpr int kTimedRuns = 15;

struct Variant {
  OwningOpRef<ModuleOp> module;
  func::FuncOp plan;
  std::vector<double> stepUs; ///< median device time per step
};

/// Lowers a copy of `graph` with `impl`, builds its device code and
/// executable, runs it on the GPU and keeps each step's median time.
LogicalResult measure(ModuleOp graph, mlir::kiln::PlanOptions options, const char *impl,
                      const BuildDeviceCode &buildDeviceCode, Variant &variant) {
  variant.module = graph.clone();
  options.implementation.impl = impl;
  options.implementation.tuningCache = "";
  PassManager pm(graph.getContext());
  mlir::kiln::buildExecPlanPipeline(pm, options);
  if (failed(pm.run(*variant.module)))
    return failure();
  variant.plan = modelFunction(*variant.module, "--autotune");
  if (!variant.plan)
    return failure();
  mlir::kiln::DeviceCode code;
  if (failed(buildDeviceCode(variant.plan, code)))
    return failure();
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  if (failed(mlir::kiln::writeExecutable(variant.plan, os, code)))
    return failure();
  os.flush();

  auto exe = rt::Executable::loadMemory(reinterpret_cast<const uint8_t *>(bytes.data()),
                                        bytes.size());
  if (!exe) {
    llvm::errs() << "kilnc: error: --autotune: " << exe.status().message() << "\n";
    return failure();
  }
  rt::SessionOptions sessionOptions;
  sessionOptions.device = rt::DeviceChoice::Cuda;
  auto session = rt::Session::create(*exe, sessionOptions);
  if (!session) {
    llvm::errs() << "kilnc: error: --autotune measures on a GPU: " << session.status().message()
                 << "\n";
    return failure();
  }
  // Timing does not depend on the values; small finite ones avoid slow
  // paths for denormals or NaN.
  for (size_t k = 0; k < (*exe)->inputs().size(); ++k) {
    std::vector<uint8_t> data(static_cast<size_t>((*exe)->inputs()[k].byteSize()), 0);
    if (rt::Status st = (*session)->setInput(k, data.data(), data.size()); !st) {
      llvm::errs() << "kilnc: error: --autotune: " << st.message() << "\n";
      return failure();
    }
  }
  std::vector<std::vector<double>> samples; // per step
  for (int run = 0; run < kWarmupRuns + kTimedRuns; ++run) {
    if (rt::Status st = (*session)->run(); !st) {
      llvm::errs() << "kilnc: error: --autotune (" << impl << "): " << st.message() << "\n";
      return failure();
    }
    if (run < kWarmupRuns)
      continue;
    for (const rt::StepTiming &t : (*session)->lastTimings()) {
      if (t.step >= samples.size())
        samples.resize(t.step + 1);
      samples[t.step].push_back(t.endUs - t.startUs);
    }
  }
  for (std::vector<double> &s : samples) {
    std::sort(s.begin(), s.end());
    variant.stepUs.push_back(s.empty() ? 0.0 : s[s.size() / 2]);
  }
  return success();
}

} // namespace

LogicalResult autotune(ModuleOp graph, const mlir::kiln::PlanOptions &options,
                       const BuildDeviceCode &buildDeviceCode, mlir::kiln::TuningCache &cache) {
  Variant library, generated;
  if (failed(measure(graph, options, "library", buildDeviceCode, library)) ||
      failed(measure(graph, options, "generated", buildDeviceCode, generated)))
    return failure();
  // Both plans come from the same graph, so their steps correspond.
  auto libSteps = library.plan.getBody().getOps<mlir::kiln::exec::StepOp>();
  size_t index = 0, recorded = 0;
  for (mlir::kiln::exec::StepOp step : libSteps) {
    size_t k = index++;
    auto gemm = step->getAttrOfType<DictionaryAttr>(mlir::kiln::kGemmAttr);
    // (A call over symbolic sizes has no one size to record times for.)
    if (!gemm || k >= generated.stepUs.size() || gemm.get("symbolic"))
      continue;
    std::string error;
    FailureOr<::kiln::rt::GemmCall> call = mlir::kiln::gemmCallFromAttr(gemm, error);
    if (failed(call))
      continue;
    std::string key = mlir::kiln::TuningCache::keyOf(
        static_cast<int>(options.implementation.arch), *call);
    cache.record(key, {library.stepUs[k], generated.stepUs[k]});
    llvm::errs() << "kilnc: autotune: " << key << ": cuBLASLt " << library.stepUs[k]
                 << " us, generated " << generated.stepUs[k] << " us\n";
    ++recorded;
  }
  llvm::errs() << "kilnc: autotune: measured " << recorded << " matmul steps\n";
  return success();
}

} // namespace driver
} // namespace kiln
