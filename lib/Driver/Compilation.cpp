//===- Compilation.cpp - one model's compile, phase by phase --------------===//

#include "kiln/Driver/Compilation.h"

#include "kiln/CodeGen/CpuCode.h"

#include "kiln/Driver/Autotune.h"
#include "kiln/Driver/DeviceCode.h"
#include "kiln/Driver/Pipeline.h"
#include "kiln/Driver/Reports.h"
#include "kiln/Driver/TargetAttributes.h"
#include "kiln/IR/GraphDot.h"
#include "kiln/IR/SymbolicSizes.h"
#include "kiln/Lowering/TuningCache.h"

#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kiln {
namespace driver {

Compilation::Compilation(const CompileOptions &options, PhaseClock &clock)
    : options(options), clock(clock), dumps(options) {}

LogicalResult Compilation::run(ModuleOp module, llvm::StringRef inputName) {
  if (failed(start(module, inputName)))
    return failure();
  if (!options.optimize)
    return success();
  if (failed(optimize(module)))
    return failure();
  return success(!options.lower || succeeded(lower(module)));
}

LogicalResult Compilation::start(ModuleOp module, llvm::StringRef inputName) {
  // Before the first dump, so that every dump says what it is compiled for;
  // with -O0 nothing is compiled, and a module that says what it was
  // compiled for keeps saying it.
  if (options.optimize || !module->hasAttr(kTargetAttr))
    setTargetAttributes(module, options);
  return dumps.dumpParsed(module, inputName);
}

LogicalResult Compilation::configure(PassManager &pm) {
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  dumps.instrument(pm);
  return success();
}

LogicalResult Compilation::optimize(ModuleOp module) {
  PassManager graph(module.getContext());
  if (failed(configure(graph)))
    return failure();
  buildGraphPipeline(graph, options);
  if (failed(graph.run(module)))
    return failure();
  clock.mark("graph-passes");
  if (options.fusionReport)
    reportFusion(module, llvm::errs());
  if (options.target != Target::CPU)
    reportLayouts(module, llvm::errs());
  if (!options.dumpDot.empty()) {
    std::string message;
    auto dot = openOutputFile(options.dumpDot, &message);
    if (!dot) {
      llvm::errs() << "kilnc: error: " << message << "\n";
      return failure();
    }
    for (auto func : module.getOps<func::FuncOp>())
      mlir::kiln::writeGraphDot(func, dot->os());
    dot->keep();
  }
  return success();
}

LogicalResult Compilation::lower(ModuleOp module) {
  PassManager plan(module.getContext());
  if (failed(configure(plan)))
    return failure();
  if (options.autotune) {
    std::string error;
    std::optional<mlir::kiln::TuningCache> cache =
        mlir::kiln::TuningCache::load(options.tuningCache, error);
    if (!cache) {
      llvm::errs() << "kilnc: error: " << error << "\n";
      return failure();
    }
    auto build = [&](func::FuncOp lowered, mlir::kiln::DeviceCode &code) {
      return buildDeviceCode(lowered, code);
    };
    if (failed(autotune(module, planOptions(options), build, *cache)) ||
        !cache->save(options.tuningCache, error)) {
      if (!error.empty())
        llvm::errs() << "kilnc: error: " << error << "\n";
      return failure();
    }
  }
  buildPlanPipeline(plan, options);
  if (failed(plan.run(module)))
    return failure();
  clock.mark("lowering");
  reportPlans(module, llvm::errs());
  if (options.kernelReport &&
      failed(reportKernels(module, options.archs, codeGenOptions(options), llvm::errs())))
    return failure();
  return success();
}

func::FuncOp modelFunction(ModuleOp module, llvm::StringRef what) {
  auto funcs = module.getOps<func::FuncOp>();
  if (std::distance(funcs.begin(), funcs.end()) != 1) {
    llvm::errs() << "kilnc: error: " << what << " needs exactly one model function\n";
    return nullptr;
  }
  return *funcs.begin();
}

LogicalResult Compilation::buildDeviceCode(func::FuncOp plan, mlir::kiln::DeviceCode &code) {
  if (options.target == Target::CPU) {
    mlir::kiln::CpuCodeOptions cpu;
    cpu.level = options.cpuLevel;
    code.deterministic = options.deterministic;
    std::string error;
    if (failed(mlir::kiln::buildCpuCode(plan, cpu, code, error))) {
      llvm::errs() << "kilnc: error: " << error << "\n";
      return failure();
    }
    clock.mark("cpu-codegen");
    return success();
  }
  return driver::buildDeviceCode(plan, options, code, clock);
}

} // namespace driver
} // namespace kiln
