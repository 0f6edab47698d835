//===- kilnc.cpp - the kiln compiler driver -------------------------------===//
//
//   kilnc MODEL.kg [--print-ir-after-all] [--dump-ir-dir=DIR]
//                  [--emit=mlir|plan|kx] [--schedule=max-concurrency|min-memory]
//                  [--max-streams=N] [--target=cpu] [--no-fusion]
//                  [--fusion-report] [--dump-dot=FILE] [-o FILE]
//
// Parses a model (.kg, .onnx, or kiln IR in .mlir), runs the default graph
// pipeline and the fusion passes (and, for --emit=plan, the lowering to an
// execution plan) and
// writes the resulting IR. Every diagnostic carries the
// model file's file:line:col and shows the offending line.
//
//===----------------------------------------------------------------------===//

#include "Autotune.h"

#include "kiln/Frontend/KgParser.h"
#include "kiln/Frontend/OnnxImporter.h"
#include "kiln/CodeGen/CompileCache.h"
#include "kiln/CodeGen/EmuLibrary.h"
#include "kiln/CodeGen/KernelGenerator.h"
#include "kiln/CodeGen/Nvrtc.h"
#include "kiln/Exec/ExecOps.h"
#include "kiln/IR/GraphDot.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Target/ExecutableWriter.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <sys/resource.h>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory kilncCategory("kilnc options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.kg | model.mlir>"),
                                          cl::Required, cl::cat(kilncCategory));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                           cl::value_desc("file"), cl::init("-"),
                                           cl::cat(kilncCategory));
enum class EmitKind { Auto, MLIR, Plan, Executable, Program, Cuda };
static cl::opt<EmitKind> emit(
    "emit",
    cl::desc("What to write (default from -o: FILE.kx an executable, FILE.mlir or stdout "
             "the Graph IR, any other FILE a standalone program)"),
    cl::init(EmitKind::Auto),
    cl::values(clEnumValN(EmitKind::MLIR, "mlir", "the optimised Graph IR"),
               clEnumValN(EmitKind::Plan, "plan",
                          "the execution plan: steps with streams, events and buffers"),
               clEnumValN(EmitKind::Executable, "kx", "a .kx executable for kiln-run"),
               clEnumValN(EmitKind::Program, "program",
                          "a standalone program: the runtime with the executable inside"),
               clEnumValN(EmitKind::Cuda, "cuda",
                          "the generated CUDA C++ kernels, one .cu file per kernel, into the "
                          "folder -o names")),
    cl::cat(kilncCategory));
static cl::opt<std::string> standaloneStub(
    "standalone-stub", cl::desc("The kiln-standalone binary to build programs from "
                                "(default: next to kilnc)"),
    cl::value_desc("path"), cl::cat(kilncCategory));
enum class TargetKind { CPU, CudaEmu, Cuda };
static cl::opt<TargetKind> target(
    "target", cl::desc("Device the executable runs on"), cl::init(TargetKind::CPU),
    cl::values(clEnumValN(TargetKind::CPU, "cpu", "the CPU"),
               clEnumValN(TargetKind::CudaEmu, "cuda-emu",
                          "generated CUDA kernels, built by the host compiler for the CPU "
                          "emulator (kiln-run --device=cuda-emu)"),
               clEnumValN(TargetKind::Cuda, "cuda",
                          "generated CUDA kernels as PTX and cubin for each --arch")),
    cl::cat(kilncCategory));
static cl::opt<std::string> emuSanitize(
    "emu-sanitize",
    cl::desc("Build the cuda-emu kernels with these sanitizers (address, undefined or both, "
             "comma-separated; clang); run them with a kiln-run built with the same "
             "(-DKILN_SANITIZE, scripts/test --sanitize)"),
    cl::value_desc("list"), cl::cat(kilncCategory));
enum class ScheduleKind { MaxConcurrency, MinMemory };
static cl::opt<ScheduleKind> schedule(
    "schedule", cl::desc("Trade-off of the execution plan"),
    cl::init(ScheduleKind::MaxConcurrency),
    cl::values(clEnumValN(ScheduleKind::MaxConcurrency, "max-concurrency",
                          "run independent branches on up to --max-streams streams"),
               clEnumValN(ScheduleKind::MinMemory, "min-memory",
                          "one stream, so buffers are reused the most")),
    cl::cat(kilncCategory));
static cl::opt<int64_t> maxStreams("max-streams",
                                   cl::desc("Most streams of the plan (default 4)"),
                                   cl::init(4), cl::cat(kilncCategory));
static cl::opt<bool> printIrAfterAll("print-ir-after-all",
                                     cl::desc("Print the IR (to stderr) after parsing and "
                                              "after every pass"),
                                     cl::cat(kilncCategory));
static cl::opt<std::string> dumpIrDir("dump-ir-dir",
                                      cl::desc("Write the IR after parsing and after every "
                                               "pass into DIR/NN-<pass>.mlir"),
                                      cl::value_desc("DIR"), cl::cat(kilncCategory));
static cl::opt<unsigned> dumpElideLimit(
    "dump-elide-limit",
    cl::desc("In dumps, elide literals with more elements than this (0: never)"),
    cl::init(16), cl::cat(kilncCategory));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Pin the shape of a model input whose dimensions are unknown (ONNX)"),
    cl::value_desc("NAME=D0xD1x..."), cl::cat(kilncCategory));
static cl::list<std::string> inputValues(
    "input-value",
    cl::desc("Specialise the model to a constant value of an input, read from a .pb or .npy "
             "file (ONNX; e.g. a shape or axes tensor that arrives as an input)"),
    cl::value_desc("NAME=FILE"), cl::cat(kilncCategory));
static cl::opt<bool> noOptimize("O0", cl::desc("Skip the graph pipeline"),
                                cl::cat(kilncCategory));
static cl::opt<bool> kernelReport(
    "kernel-report",
    cl::desc("Compile each step's generated kernel with NVRTC and print, per step: region kind, "
             "execution unit, launch shape, registers, shared memory and spills (or why the "
             "step has no kernel yet)"),
    cl::cat(kilncCategory));
static cl::list<std::string> archs("arch",
                                   cl::desc("GPU architectures to compile kernels for "
                                            "(default sm_90 and sm_80)"),
                                   cl::value_desc("sm_XX"), cl::CommaSeparated,
                                   cl::cat(kilncCategory));
enum class PrecisionKind { Strict, Tf32 };
static cl::opt<PrecisionKind> precision(
    "precision", cl::desc("What generated kernels may round (default strict)"),
    cl::init(PrecisionKind::Strict),
    cl::values(clEnumValN(PrecisionKind::Strict, "strict",
                          "f32 stays f32: f32 matmuls run on CUDA cores"),
               clEnumValN(PrecisionKind::Tf32, "tf32",
                          "f32 matmuls may round their inputs to TF32 on Tensor Cores")),
    cl::cat(kilncCategory));
static cl::opt<bool> timePhases(
    "time-phases",
    cl::desc("Print the wall time of each phase (parse, graph passes, lowering, code "
             "generation, kernel compilation, writing) and kilnc's peak memory"),
    cl::cat(kilncCategory));
enum class ImplKind { Auto, Library, Generated };
static cl::opt<ImplKind> implementation(
    "impl", cl::desc("How matmul steps are computed on a GPU target (default auto)"),
    cl::init(ImplKind::Auto),
    cl::values(clEnumValN(ImplKind::Auto, "auto",
                          "cuBLASLt where its epilogues fit and the cost model expects it to be "
                          "faster, generated kernels elsewhere"),
               clEnumValN(ImplKind::Library, "library", "cuBLASLt wherever its epilogues fit"),
               clEnumValN(ImplKind::Generated, "generated", "generated kernels only")),
    cl::cat(kilncCategory));
static cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("Only implementations whose results are bitwise the same on every run (library "
             "calls without split-K reductions)"),
    cl::cat(kilncCategory));
static cl::opt<std::string> workspaceLimit(
    "workspace-limit",
    cl::desc("Most bytes of workspace a library call may use (default: the GPU's recommended "
             "size, 32 MiB on sm_90, 4 MiB on sm_80); the memory plan reserves it per stream"),
    cl::value_desc("BYTES"), cl::cat(kilncCategory));
static cl::opt<std::string> tuningCache(
    "tuning-cache",
    cl::desc("Decide matmul steps by the times in FILE (written by --autotune) where it has "
             "them, by the cost model elsewhere"),
    cl::value_desc("FILE"), cl::cat(kilncCategory));
static cl::opt<bool> autotuneFlag(
    "autotune",
    cl::desc("Time each matmul step as a cuBLASLt call and as a generated kernel on GPU 0, "
             "record the times in --tuning-cache, then compile with them (--target=cuda)"),
    cl::cat(kilncCategory));
static cl::opt<bool> noFusion("no-fusion",
                              cl::desc("Skip operator fusion: one kernel per graph op"),
                              cl::cat(kilncCategory));
static cl::opt<bool> fusionReport(
    "fusion-report",
    cl::desc("Print every fusion decision (fused or not, and why) with its model location, "
             "then the regions per kind"),
    cl::cat(kilncCategory));
static cl::opt<std::string> dumpDot("dump-dot",
                                    cl::desc("Write the optimised graph as Graphviz DOT, "
                                             "fusion regions as clusters"),
                                    cl::value_desc("FILE"), cl::cat(kilncCategory));

namespace {

OpPrintingFlags dumpFlags() {
  OpPrintingFlags flags;
  if (dumpElideLimit > 0)
    flags.elideLargeElementsAttrs(dumpElideLimit);
  return flags;
}

/// Writes the module after every pass as DIR/NN-<pass-argument>.mlir.
class DumpToDirectory : public PassInstrumentation {
public:
  explicit DumpToDirectory(std::string dir) : dir(std::move(dir)) {}

  LogicalResult writeDump(Operation *op, llvm::StringRef stage) {
    while (op->getParentOp())
      op = op->getParentOp();
    llvm::SmallString<256> path(dir);
    char name[16];
    std::snprintf(name, sizeof(name), "%02u-", index++);
    llvm::sys::path::append(path, std::string(name) + stage.str() + ".mlir");
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      llvm::errs() << "kilnc: error: cannot write '" << path << "': " << ec.message() << "\n";
      return failure();
    }
    op->print(os, dumpFlags());
    return success();
  }

  void runAfterPass(Pass *pass, Operation *op) override {
    // Pass adaptors (the nesting of the pipeline) have no argument.
    if (!pass->getArgument().empty())
      (void)writeDump(op, pass->getArgument());
  }

private:
  std::string dir;
  unsigned index = 0;
};

/// Lets two pass managers (graph, then lowering) share one numbered dump.
class ForwardTo : public PassInstrumentation {
public:
  explicit ForwardTo(PassInstrumentation *target) : target(target) {}
  void runAfterPass(Pass *pass, Operation *op) override { target->runAfterPass(pass, op); }

private:
  PassInstrumentation *target;
};

/// A diagnostic location as the user knows it: "model.kg:12:5", or
/// "model.onnx: node" for ONNX nodes.
std::string describeLocation(Location loc) {
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
           std::to_string(file.getColumn());
  if (auto name = llvm::dyn_cast<NameLoc>(loc)) {
    auto file = llvm::dyn_cast<FileLineColLoc>(name.getChildLoc());
    return (file ? file.getFilename().str() + ": " : std::string()) + name.getName().str();
  }
  return "<unknown>";
}

/// The summary after the fusion report: graph ops, kernels, regions by kind.
void reportFusion(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    int64_t ops = 0, kernels = 0, unfused = 0;
    std::map<std::string, int64_t> regions;
    for (Operation &op : func.getBody().front()) {
      if (!llvm::isa_and_nonnull<mlir::kiln::KilnDialect>(op.getDialect()) ||
          llvm::isa<mlir::kiln::ConstantOp, mlir::kiln::WeightOp>(op))
        continue;
      ++kernels;
      if (auto region = llvm::dyn_cast<mlir::kiln::FusionOp>(op)) {
        ++regions[mlir::kiln::stringifyFusionKind(region.getKind()).str()];
        for (Operation &inner : region.getBody().front().without_terminator())
          ops += !llvm::isa<mlir::kiln::ConstantOp>(inner);
      } else {
        ++ops;
        ++unfused;
      }
    }
    llvm::errs() << "kilnc: fusion @" << func.getName() << ": " << ops << " graph ops in "
                 << kernels << " kernels:";
    for (const auto &[kind, count] : regions)
      llvm::errs() << " " << kind << " " << count << ",";
    llvm::errs() << " unfused " << unfused << "\n";
  }
}

/// Wall time per phase, for --time-phases: each mark closes the phase
/// that began at the previous one.
class PhaseClock {
public:
  void mark(const std::string &phase) {
    auto now = std::chrono::steady_clock::now();
    phases.push_back({phase, std::chrono::duration<double>(now - last).count()});
    last = now;
  }
  void print() const {
    double total = 0;
    llvm::errs() << "kilnc: phases:";
    for (const auto &[name, seconds] : phases) {
      char buffer[64];
      std::snprintf(buffer, sizeof(buffer), " %s %.3f s,", name.c_str(), seconds);
      llvm::errs() << buffer;
      total += seconds;
    }
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    char buffer[96];
    std::snprintf(buffer, sizeof(buffer), " total %.3f s; peak memory %ld KiB\n", total,
                  static_cast<long>(usage.ru_maxrss));
    llvm::errs() << buffer;
  }

private:
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, double>> phases;
};
PhaseClock phaseClock;

/// One line per function: the layout conversions kiln-assign-layouts left
/// at the model's boundary, and the bytes each reads and writes.
void reportLayouts(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    std::vector<std::string> conversions;
    int64_t bytes = 0;
    func.walk([&](mlir::kiln::RelayoutOp op) {
      auto from = mlir::kiln::getEncoding(op.getInput().getType());
      auto to = mlir::kiln::getEncoding(op.getType());
      auto type = llvm::cast<RankedTensorType>(op.getType());
      bytes += 2 * type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
      conversions.push_back(from.getLayoutString() + " -> " + to.getLayoutString() + " at " +
                            describeLocation(op.getLoc()));
    });
    if (conversions.empty())
      continue;
    llvm::errs() << "kilnc: layouts @" << func.getName() << ": " << conversions.size()
                 << (conversions.size() == 1 ? " conversion" : " conversions") << " ("
                 << llvm::join(conversions, "; ") << "), " << bytes << " bytes moved\n";
  }
}

mlir::kiln::CodeGenOptions codeGenOptions() {
  mlir::kiln::CodeGenOptions options;
  options.allowTf32 = precision == PrecisionKind::Tf32;
  return options;
}

/// Writes each generated kernel to DIR/<name>.cu.
LogicalResult writeKernelSources(ModuleOp module, llvm::StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    llvm::errs() << "kilnc: error: cannot create '" << dir << "': " << ec.message() << "\n";
    return failure();
  }
  unsigned written = 0, total = 0, shared = 0;
  for (auto func : module.getOps<func::FuncOp>())
    for (const mlir::kiln::GeneratedKernel &kernel : mlir::kiln::generateKernels(func, codeGenOptions())) {
      ++total;
      shared += kernel.sameAs >= 0;
      if (kernel.name.empty() || kernel.sameAs >= 0)
        continue;
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, kernel.name + ".cu");
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
      if (ec) {
        llvm::errs() << "kilnc: error: cannot write '" << path << "': " << ec.message() << "\n";
        return failure();
      }
      os << kernel.source;
      ++written;
    }
  llvm::errs() << "kilnc: wrote " << written << " kernels for " << total << " steps to " << dir;
  if (shared)
    llvm::errs() << " (" << shared << " steps launch a kernel another step has)";
  llvm::errs() << "\n";
  return success();
}

/// The kernel report: one line per step and architecture.
LogicalResult reportKernels(ModuleOp module, const std::vector<std::string> &targets) {
  bool ok = true;
  auto cache = ::kiln::codegen::CompileCache::fromEnvironment();
  for (auto func : module.getOps<func::FuncOp>()) {
    llvm::errs() << "kilnc: kernels @" << func.getName() << " (NVRTC "
                 << ::kiln::codegen::nvrtcVersion() << "):\n";
    for (const mlir::kiln::GeneratedKernel &kernel : mlir::kiln::generateKernels(func, codeGenOptions())) {
      llvm::errs() << "  #" << kernel.step << " " << kernel.stepName;
      if (!kernel.library.empty()) {
        llvm::errs() << ": " << kernel.library << ": " << kernel.reason << "\n";
        continue;
      }
      if (kernel.name.empty()) {
        llvm::errs() << ": no kernel (runs on the host): " << kernel.reason << "\n";
        continue;
      }
      if (kernel.sameAs >= 0) {
        llvm::errs() << ": " << kernel.name << " (the same kernel as #" << kernel.sameAs << ")\n";
        continue;
      }
      llvm::errs() << ": " << kernel.name << ", " << kernel.unit << ", " << kernel.gridBlocks
                   << " x " << kernel.blockThreads << " threads\n";
      if (!kernel.whyGenerated.empty())
        llvm::errs() << "      generated, not a library call: " << kernel.whyGenerated << "\n";
      for (const std::string &arch : targets) {
        ::kiln::codegen::NvrtcResult compiled = ::kiln::codegen::compileCudaCached(
            cache, kernel.source, kernel.name + ".cu", arch);
        if (!compiled.ok) {
          llvm::errs() << "      " << arch << ": error: " << compiled.log << "\n";
          ok = false;
          continue;
        }
        const ::kiln::codegen::KernelResources &r = compiled.resources[kernel.name];
        llvm::errs() << "      " << arch << ": " << r.registers << " registers, " << r.sharedBytes
                     << " bytes shared, "
                     << (r.spills() ? "SPILLS " + std::to_string(r.spillStoreBytes) + "/" +
                                          std::to_string(r.spillLoadBytes) + " bytes"
                                    : std::string("no spills"))
                     << "\n";
      }
    }
  }
  return success(ok);
}

std::string seconds(std::chrono::steady_clock::duration d) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f s", std::chrono::duration<double>(d).count());
  return buffer;
}

/// The kernels of `plan` for --target: the host-built library for cuda-emu,
/// or PTX and cubin per architecture for cuda; steps without a generated
/// kernel run on the host.
LogicalResult buildDeviceCode(func::FuncOp plan, const std::vector<std::string> &targets,
                              mlir::kiln::DeviceCode &code) {
  std::vector<mlir::kiln::GeneratedKernel> kernels = mlir::kiln::generateKernels(plan, codeGenOptions());
  phaseClock.mark("codegen");
  unsigned generated = 0, copies = 0, cublas = 0, cudnn = 0;
  for (const mlir::kiln::GeneratedKernel &kernel : kernels) {
    copies += kernel.kind == "transfer";
    cublas += llvm::StringRef(kernel.library).starts_with("cuBLASLt");
    cudnn += llvm::StringRef(kernel.library).starts_with("cuDNN");
    if (kernel.name.empty())
      continue;
    ++generated;
    mlir::kiln::StepKernel step;
    step.name = kernel.name;
    step.grid = kernel.gridBlocks;
    step.block = kernel.blockThreads;
    step.inputs = kernel.inputArgs;
    code.kernels[kernel.step] = step;
  }
  unsigned distinct = 0;
  for (const mlir::kiln::GeneratedKernel &kernel : kernels)
    distinct += !kernel.name.empty() && kernel.sameAs < 0;
  llvm::errs() << "kilnc: " << generated << " of " << kernels.size() - copies
               << " steps have generated kernels";
  if (distinct < generated)
    llvm::errs() << " (" << distinct << " distinct)";
  if (cublas)
    llvm::errs() << ", " << cublas << (cublas == 1 ? " is a cuBLASLt call" : " are cuBLASLt calls");
  if (cudnn)
    llvm::errs() << ", " << cudnn << (cudnn == 1 ? " is a cuDNN call" : " are cuDNN calls");
  llvm::errs() << "; the rest run on the host";
  if (copies)
    llvm::errs() << " (and " << copies << " copies between host and device)";
  llvm::errs() << "\n";
  if (target == TargetKind::CudaEmu) {
    // Built even when empty: the library marks the executable as cuda-emu.
    std::string library, error;
    bool cached = false;
    auto start = std::chrono::steady_clock::now();
    if (!mlir::kiln::buildEmuLibrary(kernels, emuSanitize, library, error, &cached)) {
      llvm::errs() << "kilnc: error: " << error << "\n";
      return failure();
    }
    llvm::errs() << "kilnc: cuda-emu kernels: "
                 << (cached ? std::string("from the kernel cache")
                            : "built in " + seconds(std::chrono::steady_clock::now() - start))
                 << "\n";
    code.blobs.push_back({"cuda-emu", "elf-so", std::move(library)});
    phaseClock.mark("host-compile");
    return success();
  }
  if (generated == 0)
    return success();
  // One translation unit per architecture, all kernels in it; remember
  // where each kernel starts, to name it in NVRTC's errors.
  std::string source;
  std::vector<std::pair<unsigned, const mlir::kiln::GeneratedKernel *>> firstLines;
  for (const mlir::kiln::GeneratedKernel &kernel : kernels)
    if (!kernel.name.empty() && kernel.sameAs < 0) {
      firstLines.push_back({1 + static_cast<unsigned>(std::count(source.begin(), source.end(), '\n')),
                            &kernel});
      source += kernel.source + "\n";
    }
  auto cache = ::kiln::codegen::CompileCache::fromEnvironment();
  for (auto [index, arch] : llvm::enumerate(targets)) {
    auto start = std::chrono::steady_clock::now();
    bool cached = false;
    ::kiln::codegen::NvrtcResult compiled = ::kiln::codegen::compileCudaCached(
        cache, source, plan.getName().str() + ".cu", arch, &cached);
    llvm::errs() << "kilnc: [" << index + 1 << "/" << targets.size() << "] " << distinct
                 << " kernels for " << arch << ": "
                 << (cached ? std::string("from the kernel cache")
                            : "NVRTC " + seconds(std::chrono::steady_clock::now() - start))
                 << "\n";
    if (!compiled.ok) {
      llvm::errs() << "kilnc: error: NVRTC failed for " << arch << ":\n" << compiled.log << "\n";
      // Name the kernel (and its region's model location) of each error.
      llvm::SmallVector<llvm::StringRef> lines;
      llvm::StringRef(compiled.log).split(lines, '\n');
      for (llvm::StringRef line : lines) {
        size_t open = line.find(".cu("), close = line.find("): error");
        unsigned at = 0;
        if (open == llvm::StringRef::npos || close == llvm::StringRef::npos ||
            line.slice(open + 4, close).getAsInteger(10, at))
          continue;
        const mlir::kiln::GeneratedKernel *owner = nullptr;
        for (auto &[first, kernel] : firstLines)
          if (first <= at)
            owner = kernel;
        if (owner)
          llvm::errs() << "kilnc: note: line " << at << " is in kernel " << owner->name
                       << " (step #" << owner->step << " " << owner->stepName
                       << (owner->location.empty() ? "" : ", from " + owner->location) << ")\n";
      }
      return failure();
    }
    code.blobs.push_back({arch, "ptx", compiled.ptx});
    code.blobs.push_back({arch, "cubin", compiled.cubin});
  }
  phaseClock.mark("nvrtc");
  return success();
}

/// One line per function on stderr: steps, streams, events and memory.
void reportPlans(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    int64_t steps = 0, events = 0, moved = 0;
    auto bytes = [](Type type) {
      auto tensor = llvm::cast<RankedTensorType>(type);
      return tensor.getNumElements() *
             std::max<int64_t>(1, (tensor.getElementTypeBitWidth() + 7) / 8);
    };
    func.walk([&](mlir::kiln::exec::StepOp step) {
      ++steps;
      events += step.getEvent().has_value();
      // What the step's kernel reads and writes in memory (a splat
      // constant is a literal, not a read).
      for (Value input : step.getInputs()) {
        auto constant = input.getDefiningOp<mlir::kiln::ConstantOp>();
        auto dense = constant ? llvm::dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
        if (!dense || !dense.isSplat())
          moved += bytes(input.getType());
      }
      for (Type t : step.getResultTypes())
        moved += bytes(t);
    });
    auto attr = [&](llvm::StringRef name) {
      auto value = func->getAttrOfType<IntegerAttr>(name);
      return value ? value.getInt() : 0;
    };
    int64_t workspace = attr("exec.workspace_bytes");
    int64_t peak = attr("exec.arena_bytes") - workspace, unshared = attr("exec.unshared_bytes");
    int64_t streams = attr("exec.streams");
    llvm::errs() << "kilnc: plan @" << func.getName() << ": " << steps << " steps on "
                 << streams << (streams == 1 ? " stream, " : " streams, ") << events
                 << (events == 1 ? " event" : " events") << "; arena "
                 << peak << " bytes peak vs " << unshared << " bytes unshared";
    if (unshared > 0)
      llvm::errs() << " (" << (100 * peak + unshared / 2) / unshared << "%)";
    if (workspace > 0)
      llvm::errs() << ", plus " << workspace << " bytes of library workspace";
    llvm::errs() << "; " << moved << " bytes moved\n";
  }
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "kiln model compiler\n");

  MLIRContext context;
  // Diagnostics point into the model file; the IR of the op is noise there.
  context.printOpOnDiagnostic(false);
  context.loadDialect<mlir::kiln::KilnDialect, mlir::kiln::exec::ExecDialect,
                      func::FuncDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // ONNX nodes have no line numbers: name the model file and the node.
  ScopedDiagnosticHandler nodeDiagnostics(&context, [](Diagnostic &diag) {
    auto name = llvm::dyn_cast<NameLoc>(diag.getLocation());
    auto file = name ? llvm::dyn_cast<FileLineColLoc>(name.getChildLoc()) : FileLineColLoc();
    if (!file || file.getLine() != 0)
      return failure(); // not an ONNX node: the source-manager handler prints it
    llvm::errs() << file.getFilename().getValue() << ": " << name.getName().getValue() << ": "
                 << (diag.getSeverity() == DiagnosticSeverity::Error ? "error: " : "note: ")
                 << diag.str() << "\n";
    return success();
  });

  // The fusion report: one line per remark, without the source excerpt.
  ScopedDiagnosticHandler remarks(&context, [](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Remark)
      return failure();
    llvm::errs() << describeLocation(diag.getLocation()) << ": " << diag.str() << "\n";
    return success();
  });

  // Parse.
  OwningOpRef<ModuleOp> module;
  if (llvm::StringRef(inputFilename).ends_with(".mlir")) {
    std::string message;
    auto file = openInputFile(inputFilename, &message);
    if (!file) {
      llvm::errs() << "kilnc: error: " << message << "\n";
      return 1;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  } else if (llvm::StringRef(inputFilename).ends_with(".onnx")) {
    ::kiln::frontend::OnnxImportOptions options;
    for (const std::string &pin : inputShapes) {
      llvm::StringRef name, dims;
      std::tie(name, dims) = llvm::StringRef(pin).rsplit('=');
      std::vector<int64_t> shape;
      bool ok = !name.empty() && !dims.empty();
      llvm::SmallVector<llvm::StringRef> parts;
      dims.split(parts, 'x');
      for (llvm::StringRef part : parts) {
        int64_t d;
        ok &= !part.getAsInteger(10, d) && d >= 0;
        shape.push_back(ok ? d : 0);
      }
      if (!ok) {
        llvm::errs() << "kilnc: error: --input-shape takes NAME=D0xD1x..., got '" << pin << "'\n";
        return 1;
      }
      options.inputShapes[name.str()] = shape;
    }
    for (const std::string &pin : inputValues) {
      auto [name, file] = llvm::StringRef(pin).split('=');
      if (name.empty() || file.empty()) {
        llvm::errs() << "kilnc: error: --input-value takes NAME=FILE, got '" << pin << "'\n";
        return 1;
      }
      options.inputValues[name.str()] = file.str();
    }
    module = ::kiln::frontend::importOnnxFile(inputFilename, &context, options);
  } else {
    if (!inputShapes.empty() || !inputValues.empty()) {
      llvm::errs() << "kilnc: error: --input-shape and --input-value apply to ONNX models; a "
                      ".kg model states its inputs\n";
      return 1;
    }
    module = ::kiln::frontend::parseKgFile(inputFilename, sourceMgr, &context);
  }
  if (!module)
    return 1;
  phaseClock.mark("parse");

  std::unique_ptr<DumpToDirectory> dumper; // outlives both pass managers
  if (!dumpIrDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpIrDir)) {
      llvm::errs() << "kilnc: error: cannot create '" << dumpIrDir << "': " << ec.message()
                   << "\n";
      return 1;
    }
    dumper = std::make_unique<DumpToDirectory>(dumpIrDir);
    if (failed(dumper->writeDump(*module, "input")))
      return 1;
  }
  if (printIrAfterAll) {
    llvm::errs() << "// -----// IR Dump After Parse (" << inputFilename << ") //----- //\n";
    module->print(llvm::errs(), dumpFlags());
    llvm::errs() << "\n";
  }

  EmitKind kind = emit;
  if (kind == EmitKind::Auto) {
    llvm::StringRef out(outputFilename);
    kind = out.ends_with(".kx")                        ? EmitKind::Executable
           : (out == "-" || out.ends_with(".mlir")) ? EmitKind::MLIR
                                                      : EmitKind::Program;
  }
  bool lower = kind == EmitKind::Plan || kind == EmitKind::Executable ||
               kind == EmitKind::Program || kind == EmitKind::Cuda || kernelReport;
  if (kind == EmitKind::Cuda && outputFilename == "-") {
    llvm::errs() << "kilnc: error: --emit=cuda writes one file per kernel: name a folder with -o\n";
    return 1;
  }
  std::vector<std::string> targets(archs.begin(), archs.end());
  if (targets.empty())
    targets = {"sm_90", "sm_80"};
  int firstArch = 0;
  for (const std::string &arch : targets) {
    // A compute capability: sm_10 (1.0) to sm_999; the number also becomes
    // an int (kiln-select-impl's arch).
    unsigned number = 0;
    if (!llvm::StringRef(arch).starts_with("sm_") ||
        llvm::StringRef(arch).drop_front(3).getAsInteger(10, number) || number < 10 ||
        number > 999) {
      llvm::errs() << "kilnc: error: --arch takes sm_XX, a compute capability (e.g. sm_90), got '"
                   << arch << "'\n";
      return 1;
    }
    if (!firstArch)
      firstArch = static_cast<int>(number);
  }
  if (maxStreams < 1) {
    llvm::errs() << "kilnc: error: --max-streams must be at least 1, got " << maxStreams << "\n";
    return 1;
  }
  int64_t workspaceBytes = -1;
  if (workspaceLimit.getNumOccurrences()) {
    llvm::StringRef text(workspaceLimit);
    int64_t scale = 1;
    if (text.consume_back("KiB"))
      scale = int64_t(1) << 10;
    else if (text.consume_back("MiB"))
      scale = int64_t(1) << 20;
    else if (text.consume_back("GiB"))
      scale = int64_t(1) << 30;
    if (text.getAsInteger(10, workspaceBytes) || workspaceBytes < 0 ||
        workspaceBytes > (int64_t(1) << 40) / scale) {
      llvm::errs() << "kilnc: error: --workspace-limit takes bytes (optionally with KiB, MiB or "
                      "GiB), got '"
                   << workspaceLimit << "'\n";
      return 1;
    }
    workspaceBytes *= scale;
  }
  if (autotuneFlag && (target != TargetKind::Cuda || tuningCache.empty() || !lower)) {
    llvm::errs() << "kilnc: error: --autotune measures on a GPU: it needs --target=cuda, "
                    "--tuning-cache=FILE to record the times in, and an executable or plan to "
                    "compile\n";
    return 1;
  }
  if (!emuSanitize.empty()) {
    if (target != TargetKind::CudaEmu) {
      llvm::errs() << "kilnc: error: --emu-sanitize applies to --target=cuda-emu\n";
      return 1;
    }
    std::string problem = mlir::kiln::checkEmuSanitizers(emuSanitize);
    if (!problem.empty()) {
      llvm::errs() << "kilnc: error: --emu-sanitize: " << problem << "\n";
      return 1;
    }
  }
  if (!tuningCache.empty() && target == TargetKind::CPU) {
    llvm::errs() << "kilnc: error: --tuning-cache applies to --target=cuda and cuda-emu\n";
    return 1;
  }
  std::unique_ptr<llvm::MemoryBuffer> stub;
  if (kind == EmitKind::Program) {
    // Find the stub first, so a missing one fails before any work.
    std::string path = standaloneStub;
    if (path.empty()) {
      llvm::SmallString<256> dir(llvm::sys::path::parent_path(
          llvm::sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&main))));
      for (const char *candidate : {"kiln-standalone", "../kiln-run/kiln-standalone"}) {
        llvm::SmallString<256> p(dir);
        llvm::sys::path::append(p, candidate);
        if (llvm::sys::fs::exists(p)) {
          path = std::string(p);
          break;
        }
      }
    }
    auto buffer = llvm::MemoryBuffer::getFile(path.empty() ? "kiln-standalone" : path,
                                              /*IsText=*/false);
    if (!buffer) {
      llvm::errs() << "kilnc: error: cannot read the standalone-program stub '"
                   << (path.empty() ? "kiln-standalone" : path)
                   << "': " << buffer.getError().message() << "; pass --standalone-stub\n";
      return 1;
    }
    stub = std::move(*buffer);
  }
  if (noOptimize && target != TargetKind::CPU) {
    llvm::errs() << "kilnc: error: -O0 stops after parsing; --target=cuda and cuda-emu need the "
                    "pipeline\n";
    return 1;
  }
  if (lower && noOptimize) {
    llvm::errs() << "kilnc: error: -O0 stops after parsing; it cannot produce a plan or an "
                    "executable\n";
    return 1;
  }

  // Optimise, fuse, then (for plans and executables) lower.
  if (!noOptimize) {
    auto configure = [&](PassManager &pm) -> LogicalResult {
      if (failed(applyPassManagerCLOptions(pm)))
        return failure();
      applyDefaultTimingPassManagerCLOptions(pm);
      if (printIrAfterAll) {
        // Printing the whole module after a function pass needs the passes
        // to run one function at a time.
        context.disableMultithreading();
        pm.enableIRPrinting(
            /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
            /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
            /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
            /*printAfterOnlyOnFailure=*/false, llvm::errs(), dumpFlags());
      }
      if (dumper) {
        context.disableMultithreading();
        pm.addInstrumentation(std::make_unique<ForwardTo>(dumper.get()));
      }
      return success();
    };
    PassManager graph(&context);
    if (failed(configure(graph)))
      return 1;
    mlir::kiln::buildDefaultGraphPipeline(graph);
    if (target != TargetKind::CPU) {
      // Row-major inside (what the kernels and cuBLASLt read and write),
      // then the GPU gets every op it has code for; the host the rest.
      graph.nest<func::FuncOp>().addPass(mlir::kiln::createKilnAssignLayouts());
      graph.nest<func::FuncOp>().addPass(mlir::kiln::createKilnPlace());
    }
    if (!noFusion) {
      mlir::kiln::FusionOptions fusion;
      fusion.report = fusionReport;
      mlir::kiln::buildFusionPipeline(graph, fusion);
    }
    if (failed(graph.run(*module)))
      return 1;
    phaseClock.mark("graph-passes");
    if (fusionReport)
      reportFusion(*module);
    if (target != TargetKind::CPU)
      reportLayouts(*module);
    if (!dumpDot.empty()) {
      std::string message;
      auto dot = openOutputFile(dumpDot, &message);
      if (!dot) {
        llvm::errs() << "kilnc: error: " << message << "\n";
        return 1;
      }
      for (auto func : module->getOps<func::FuncOp>())
        mlir::kiln::writeGraphDot(func, dot->os());
      dot->keep();
    }
    if (lower) {
      PassManager plan(&context);
      if (failed(configure(plan)))
        return 1;
      mlir::kiln::PlanOptions options;
      options.maxStreams = schedule == ScheduleKind::MinMemory ? 1 : maxStreams.getValue();
      if (target != TargetKind::CPU) {
        // cuda-emu makes the same choices as cuda, so it runs what the GPU
        // would (library calls emulated on the host).
        options.selectImplementations = true;
        mlir::kiln::KilnSelectImplementationsOptions &impl = options.implementation;
        impl.arch = firstArch;
        impl.precision = precision == PrecisionKind::Tf32 ? "tf32" : "strict";
        impl.deterministic = deterministic;
        impl.workspaceLimit = workspaceBytes;
        impl.impl = implementation == ImplKind::Library     ? "library"
                    : implementation == ImplKind::Generated ? "generated"
                                                            : "auto";
        impl.tuningCache = tuningCache;
      }
      if (autotuneFlag) {
        std::string error;
        std::optional<mlir::kiln::TuningCache> cache =
            mlir::kiln::TuningCache::load(tuningCache, error);
        if (!cache) {
          llvm::errs() << "kilnc: error: " << error << "\n";
          return 1;
        }
        auto build = [&](func::FuncOp plan, mlir::kiln::DeviceCode &code) {
          return buildDeviceCode(plan, targets, code);
        };
        if (failed(::kiln::tools::autotune(*module, options, build, *cache)) ||
            !cache->save(tuningCache, error)) {
          if (!error.empty())
            llvm::errs() << "kilnc: error: " << error << "\n";
          return 1;
        }
      }
      mlir::kiln::buildExecPlanPipeline(plan, options);
      if (failed(plan.run(*module)))
        return 1;
      phaseClock.mark("lowering");
      reportPlans(*module);
      if (kernelReport && failed(reportKernels(*module, targets)))
        return 1;
    }
  } else if (!dumpDot.empty() || fusionReport) {
    llvm::errs() << "kilnc: error: -O0 stops after parsing; --dump-dot and --fusion-report "
                    "need the graph pipeline\n";
    return 1;
  }

  // Emit.
  if (kind == EmitKind::Cuda)
    return failed(writeKernelSources(*module, outputFilename)) ? 1 : 0;
  std::string message;
  auto output = openOutputFile(outputFilename, &message);
  if (!output) {
    llvm::errs() << "kilnc: error: " << message << "\n";
    return 1;
  }
  if (kind == EmitKind::Executable || kind == EmitKind::Program) {
    auto funcs = module->getOps<func::FuncOp>();
    if (std::distance(funcs.begin(), funcs.end()) != 1) {
      llvm::errs() << "kilnc: error: an executable holds exactly one model function\n";
      return 1;
    }
    mlir::kiln::DeviceCode code;
    if (target != TargetKind::CPU && failed(buildDeviceCode(*funcs.begin(), targets, code)))
      return 1;
    std::string kx;
    llvm::raw_string_ostream kxStream(kx);
    if (failed(mlir::kiln::writeExecutable(*funcs.begin(), kxStream, code)))
      return 1;
    phaseClock.mark("serialize");
    kxStream.flush();
    if (kind == EmitKind::Program) {
      // stub | executable | size (u64, little-endian) | "KILNEMBD"
      output->os() << stub->getBuffer() << kx;
      uint64_t size = kx.size();
      output->os().write(reinterpret_cast<const char *>(&size), sizeof(size));
      output->os() << "KILNEMBD";
    } else {
      output->os() << kx;
    }
  } else {
    module->print(output->os());
    output->os() << "\n";
  }
  // A full disk shows here, not at each write; say so instead of LLVM's
  // fatal "IO failure on output stream" when the stream is destroyed.
  output->os().flush();
  if (std::error_code ec = output->os().error()) {
    llvm::errs() << "kilnc: error: cannot write '" << outputFilename << "': " << ec.message()
                 << "\n";
    output->os().clear_error();
    return 1;
  }
  output->keep();
  phaseClock.mark("write");
  if (timePhases)
    phaseClock.print();
  // Only a file kilnc wrote becomes executable, never a device or a pipe
  // named by -o (as root, -o /dev/null would change /dev/null for all).
  if (kind == EmitKind::Program && outputFilename != "-" &&
      llvm::sys::fs::is_regular_file(outputFilename))
    llvm::sys::fs::setPermissions(outputFilename, llvm::sys::fs::all_read |
                                                      llvm::sys::fs::all_exe |
                                                      llvm::sys::fs::owner_write);
  return 0;
}
