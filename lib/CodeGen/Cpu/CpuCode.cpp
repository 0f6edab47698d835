//===- CpuCode.cpp - CPU kernels: plan, lower, emit an object -------------===//
//
// The kernels of a plan go into one MLIR module, lowered as MLIR's own CPU
// path does: math ops to polynomials (no libm calls: the runtime's loader
// links no symbols), scf to cf, everything to the LLVM dialect, then LLVM
// IR, LLVM's -O3 pipeline (the loop vectoriser for the level's vector
// width) and the TargetMachine's object emitter.
//
//===----------------------------------------------------------------------===//

#include "kiln/CodeGen/CpuCode.h"

#include "CpuKernelEmitter.h"

#include "kiln/Exec/ExecOps.h"
#include "kiln/IR/SymbolicSizes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <map>

namespace mlir {
namespace kiln {

namespace {

constexpr const char *kTriple = "x86_64-unknown-linux-gnu";

/// What each x86-64 level (kiln/Runtime/CpuLevels.h, in order) adds, in
/// LLVM's feature names.
struct Level {
  const char *name;
  std::vector<const char *> features;
  bool fma;   ///< fused multiply-add instructions
  bool round; ///< SSE4.1's floor and ceil instructions
};
const std::vector<Level> &levels() {
  static const std::vector<Level> table = {
      {::kiln::kCpuLevels[0], {}, false, false},
      {::kiln::kCpuLevels[1], {"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf"}, false, true},
      {::kiln::kCpuLevels[2], {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe"}, true, true},
      {::kiln::kCpuLevels[3], {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}, true, true},
  };
  static_assert(::kiln::kCpuLevelCount == 4, "one entry per level");
  return table;
}

const Level *findLevel(llvm::StringRef name) {
  for (const Level &level : levels())
    if (name == level.name)
      return &level;
  return nullptr;
}

void initializeX86() {
  static bool done = [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    return true;
  }();
  (void)done;
}

/// The kernels' module lowered to the LLVM dialect.
LogicalResult lowerToLLVMDialect(ModuleOp module, const Level &level) {
  MLIRContext *context = module.getContext();
  RewritePatternSet approximations(context);
  populateMathPolynomialApproximationPatterns(approximations);
  // Without the instructions, llvm.fma, llvm.floor and llvm.ceil would
  // become calls to libm: expanded into plain arithmetic instead.
  if (!level.fma)
    populateExpandFmaFPattern(approximations);
  if (!level.round) {
    populateExpandFloorFPattern(approximations);
    populateExpandCeilFPattern(approximations);
  }
  if (failed(applyPatternsAndFoldGreedily(module, std::move(approximations))))
    return failure();
  PassManager pm(context);
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return pm.run(module);
}

/// LLVM IR of the lowered module, its bodies private, inlined into their
/// entry points and their pointers noalias (each run's reads and writes are
/// distinct buffers), optimised at -O3 for `machine`.
std::unique_ptr<llvm::Module> optimizedIR(ModuleOp module, llvm::LLVMContext &llvmContext,
                                          llvm::TargetMachine &machine, llvm::StringRef tuneCpu) {
  std::unique_ptr<llvm::Module> ir = translateModuleToLLVMIR(module, llvmContext, "kiln-cpu");
  if (!ir)
    return nullptr;
  ir->setTargetTriple(kTriple);
  ir->setDataLayout(machine.createDataLayout());
  for (llvm::Function &function : *ir) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("tune-cpu", tuneCpu);
    function.addFnAttr("no-builtins"); // no loop turned into a memset call
    function.addFnAttr(llvm::Attribute::NoUnwind);
    if (function.getName().ends_with(kCpuKernelBodySuffix)) {
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
      function.addFnAttr(llvm::Attribute::AlwaysInline);
      for (llvm::Argument &arg : function.args())
        if (arg.getType()->isPointerTy())
          arg.addAttr(llvm::Attribute::NoAlias);
    }
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder passes(&machine, tuning);
  passes.registerModuleAnalyses(mam);
  passes.registerCGSCCAnalyses(cgam);
  passes.registerFunctionAnalyses(fam);
  passes.registerLoopAnalyses(lam);
  passes.crossRegisterProxies(lam, fam, cgam, mam);
  passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(*ir, mam);
  return ir;
}

/// The object's undefined symbols: the runtime's loader resolves none.
std::vector<std::string> undefinedSymbols(llvm::StringRef object) {
  std::vector<std::string> names;
  auto file = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(object, "kiln-cpu.o"));
  if (!file) {
    llvm::consumeError(file.takeError());
    return {"(unreadable object)"};
  }
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols()) {
    auto flags = symbol.getFlags();
    auto name = symbol.getName();
    if (flags && name && (*flags & llvm::object::SymbolRef::SF_Undefined) && !name->empty())
      names.push_back(name->str());
    if (!flags)
      llvm::consumeError(flags.takeError());
    if (!name)
      llvm::consumeError(name.takeError());
  }
  return names;
}

/// The kernels of `runs` for `level`, as an ELF relocatable object.
LogicalResult compileObject(MLIRContext *context, const std::vector<std::pair<const CpuRun *, std::string>> &kernels,
                            const Level &level, std::string &object, std::string &error) {
  OpBuilder builder(context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  for (const auto &[run, symbol] : kernels)
    emitCpuKernel(builder, loc, *run, symbol);
  if (failed(lowerToLLVMDialect(*module, level))) {
    error = "lowering the CPU kernels to the LLVM dialect failed";
    return failure();
  }
  initializeX86();
  std::string lookupError;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(kTriple, lookupError);
  if (!target) {
    error = "LLVM has no x86-64 target: " + lookupError;
    return failure();
  }
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kTriple, level.name, "", targetOptions, llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOptLevel::Aggressive));
  llvm::LLVMContext llvmContext;
  // Tuned for this machine's CPU where it has the level, else generically.
  std::string host = llvm::sys::getHostCPUName().str();
  std::unique_ptr<llvm::Module> ir =
      optimizedIR(*module, llvmContext, *machine, hostCpuLevel() == level.name ? host : "generic");
  if (!ir) {
    error = "translating the CPU kernels to LLVM IR failed";
    return failure();
  }
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager emit;
  if (machine->addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "LLVM cannot emit an object file for " + std::string(level.name);
    return failure();
  }
  emit.run(*ir);
  object.assign(bytes.begin(), bytes.end());
  if (std::vector<std::string> undefined = undefinedSymbols(object); !undefined.empty()) {
    error = "the CPU kernels for " + std::string(level.name) + " need '" + undefined.front() +
            "', which the runtime does not provide";
    return failure();
  }
  return success();
}

/// The dialects the kernels are built from and their LLVM IR translations.
void prepareContext(MLIRContext *context) {
  context->loadDialect<arith::ArithDialect, cf::ControlFlowDialect, func::FuncDialect,
                       LLVM::LLVMDialect, math::MathDialect, scf::SCFDialect>();
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context->appendDialectRegistry(registry);
}

/// Every step's runs, and the distinct ones with their symbols (equal runs
/// share one kernel).
struct PlannedKernels {
  std::vector<std::vector<CpuRun>> runsOfSteps;
  std::vector<std::pair<const CpuRun *, std::string>> distinct;
};

/// Plans the kernels of `plan`; with `code`, records each step's runs in it.
PlannedKernels planKernels(func::FuncOp plan, DeviceCode *code) {
  PlannedKernels planned;
  std::map<std::string, std::string> symbolOf;
  for (exec::StepOp step : plan.getBody().getOps<exec::StepOp>())
    planned.runsOfSteps.push_back(planCpuRuns(step));
  for (auto [stepIndex, runs] : llvm::enumerate(planned.runsOfSteps))
    for (const CpuRun &run : runs) {
      std::string signature = cpuRunSignature(run);
      auto [it, isNew] =
          symbolOf.try_emplace(signature, "kiln_cpu_" + std::to_string(symbolOf.size()));
      if (isNew)
        planned.distinct.push_back({&run, it->second});
      if (code)
        code->cpuKernels[stepIndex].push_back(
            {it->second, run.ops.front(), static_cast<unsigned>(run.ops.size()), run.reads,
             run.writes, run.symbolicElements ? 0 : run.elements,
             run.reduction && !run.symbolicRow ? run.row : 1, run.symbolicElements,
             run.countReads, run.countDivisors, run.countSizes, run.symbolicRow});
    }
  return planned;
}

} // namespace

bool isCpuLevel(llvm::StringRef name) { return findLevel(name) != nullptr; }

std::string hostCpuLevel() {
  llvm::Triple host(llvm::sys::getProcessTriple());
  if (host.getArch() != llvm::Triple::x86_64)
    return "";
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::string best = ::kiln::kCpuBaseline;
  for (const Level &level : levels()) {
    if (!llvm::all_of(level.features, [&](const char *f) { return features.lookup(f); }))
      break;
    best = level.name;
  }
  return best;
}

LogicalResult buildCpuCode(func::FuncOp plan, const CpuCodeOptions &options, DeviceCode &code,
                           std::string &error) {
  std::string levelName = options.level == "native" ? hostCpuLevel() : options.level;
  const Level *level = findLevel(levelName);
  if (!level) {
    error = levelName.empty() ? "the CPU target builds x86-64 code, and this machine is not x86-64"
                              : "unknown CPU level '" + levelName + "' (native, " +
                                    ::kiln::cpuLevelNames() + ")";
    return failure();
  }
  MLIRContext *context = plan.getContext();
  prepareContext(context);
  PlannedKernels planned = planKernels(plan, &code);
  const auto &kernels = planned.distinct;
  if (kernels.empty())
    return success();
  std::vector<const Level *> builds = {level};
  if (level != &levels().front())
    builds.push_back(&levels().front()); // the portable baseline, always
  for (const Level *build : builds) {
    std::string object;
    if (failed(compileObject(context, kernels, *build, object, error)))
      return failure();
    code.blobs.push_back({build->name, "elf-rel", std::move(object)});
  }
  return success();
}

LogicalResult writeCpuKernels(func::FuncOp plan, llvm::raw_ostream &os) {
  MLIRContext *context = plan.getContext();
  prepareContext(context);
  PlannedKernels planned = planKernels(plan, nullptr);
  OpBuilder builder(context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(builder.getUnknownLoc());
  builder.setInsertionPointToEnd(module->getBody());
  for (const auto &[run, symbol] : planned.distinct) {
    emitCpuKernel(builder, builder.getUnknownLoc(), *run, symbol);
    auto kernel = module->lookupSymbol<func::FuncOp>(symbol);
    std::string ops, locations;
    for (Operation *op : run->ops) {
      ops += (ops.empty() ? "" : "+") + op->getName().stripDialect().str();
      if (auto at = llvm::dyn_cast<FileLineColLoc>(op->getLoc()))
        locations += (locations.empty() ? "" : ", ") + at.getFilename().str() + ":" +
                     std::to_string(at.getLine()) + ":" + std::to_string(at.getColumn());
    }
    kernel->setAttr("kiln.ops", builder.getStringAttr(ops));
    if (!locations.empty())
      kernel->setAttr("kiln.locations", builder.getStringAttr(locations));
    SmallVector<Attribute> reads;
    for (ReadBroadcast b : run->broadcasts)
      reads.push_back(builder.getStringAttr(b == ReadBroadcast::Full     ? "full"
                                            : b == ReadBroadcast::Row    ? "row"
                                            : b == ReadBroadcast::Column ? "column"
                                            : b == ReadBroadcast::RowGroup ? "row group"
                                                                         : "scalar"));
    kernel->setAttr("kiln.reads", builder.getArrayAttr(reads));
    kernel->setAttr("kiln.rows",
                    builder.getStringAttr(run->symbolicElements
                                              ? "(" + sizeString(run->symbolicElements) + ") / row"
                                              : std::to_string(run->elements / run->row) + " x " +
                                                    std::to_string(run->row)));
  }
  module->print(os);
  os << "\n";
  return success();
}

} // namespace kiln
} // namespace mlir
