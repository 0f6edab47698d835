//===- kilnc.cpp - the kiln compiler's command line -----------------------===//
//
//   kilnc MODEL.kg [--print-ir-after-all] [--dump-ir-dir=DIR]
//                  [--emit=mlir|plan|kx|program|cuda] [--target=cpu|cuda-emu|cuda]
//                  [--schedule=max-concurrency|min-memory] [--max-streams=N]
//                  [--no-fusion] [--fusion-report] [--dump-dot=FILE]
//                  [--elide-constants=N|off] [-o FILE]
//
// Parses the flags into a kiln::driver::CompileOptions, reads the model
// (.kg, .onnx, or kiln IR in .mlir), lets the driver (lib/Driver) compile
// it and writes what --emit asks for. Every diagnostic carries the model
// file's file:line:col and shows the offending line.
//
//===----------------------------------------------------------------------===//

#include "kiln/CodeGen/CpuCode.h"
#include "kiln/Driver/Compilation.h"
#include "kiln/Driver/CompileOptions.h"
#include "kiln/Driver/DeviceCode.h"
#include "kiln/Driver/Diagnostics.h"
#include "kiln/Driver/IRDumps.h"
#include "kiln/Driver/PhaseClock.h"
#include "kiln/Exec/ExecOps.h"
#include "kiln/Frontend/KgParser.h"
#include "kiln/Frontend/OnnxImporter.h"
#include "kiln/IR/KilnDialect.h"
#include "kiln/Target/ExecutableWriter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;
namespace driver = ::kiln::driver;

static cl::OptionCategory kilncCategory("kilnc options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.kg | model.mlir>"),
                                          cl::Required, cl::cat(kilncCategory));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                           cl::value_desc("file"), cl::init("-"),
                                           cl::cat(kilncCategory));
enum class EmitKind { Auto, MLIR, Plan, Executable, Program, Cuda, CpuMlir };
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
                          "folder -o names"),
               clEnumValN(EmitKind::CpuMlir, "cpu-mlir",
                          "the CPU kernels (--target=cpu) as MLIR before their lowering to "
                          "LLVM: one function per run of elementwise ops")),
    cl::cat(kilncCategory));
static cl::opt<std::string> standaloneStub(
    "standalone-stub", cl::desc("The kiln-standalone binary to build programs from "
                                "(default: next to kilnc)"),
    cl::value_desc("path"), cl::cat(kilncCategory));
static cl::opt<driver::Target> target(
    "target", cl::desc("Device the executable runs on"), cl::init(driver::Target::CPU),
    cl::values(clEnumValN(driver::Target::CPU, "cpu", "the CPU"),
               clEnumValN(driver::Target::CudaEmu, "cuda-emu",
                          "generated CUDA kernels, built by the host compiler for the CPU "
                          "emulator (kiln-run --device=cuda-emu)"),
               clEnumValN(driver::Target::Cuda, "cuda",
                          "generated CUDA kernels as PTX and cubin for each --arch")),
    cl::cat(kilncCategory));
static cl::opt<std::string> emuSanitize(
    "emu-sanitize",
    cl::desc("Build the cuda-emu kernels with these sanitizers (address, undefined or both, "
             "comma-separated; clang); run them with a kiln-run built with the same "
             "(-DKILN_SANITIZE, scripts/test --sanitize)"),
    cl::value_desc("list"), cl::cat(kilncCategory));
static cl::opt<bool> emuProfile(
    "emu-profile",
    cl::desc("Build the cuda-emu kernels for kiln-run --profile: every load and store traced "
             "(clang), each kernel's sm_90 registers and shared memory recorded (NVRTC)"),
    cl::cat(kilncCategory));
static cl::opt<driver::Schedule> schedule(
    "schedule", cl::desc("Trade-off of the execution plan"),
    cl::init(driver::Schedule::MaxConcurrency),
    cl::values(clEnumValN(driver::Schedule::MaxConcurrency, "max-concurrency",
                          "run independent branches on up to --max-streams streams"),
               clEnumValN(driver::Schedule::MinMemory, "min-memory",
                          "one stream, so buffers are reused the most")),
    cl::cat(kilncCategory));
static cl::opt<int64_t> maxStreams("max-streams",
                                   cl::desc("Most streams of the plan (default 4 for the GPU "
                                            "targets; 1 for --target=cpu, whose steps each "
                                            "use every core)"),
                                   cl::init(4), cl::cat(kilncCategory));
static cl::opt<bool> printIrAfterAll("print-ir-after-all",
                                     cl::desc("Print the IR (to stderr) after parsing and "
                                              "after every pass"),
                                     cl::cat(kilncCategory));
static cl::opt<std::string> dumpIrDir("dump-ir-dir",
                                      cl::desc("Write the IR after parsing and after every "
                                               "pass into DIR/NN-<pass>.mlir"),
                                      cl::value_desc("DIR"), cl::cat(kilncCategory));
static cl::opt<std::string> elideConstants(
    "elide-constants",
    cl::desc("Print literals with more than N elements as dense_resource<__elided__> in the "
             "IR kilnc prints (default: 16 when the output is a terminal, off for files, "
             "pipes and the dumps, which read back)"),
    cl::value_desc("N|off"), cl::cat(kilncCategory));
// Older spelling of --elide-constants that applies to the dumps only.
static cl::opt<unsigned> dumpElideLimit(
    "dump-elide-limit",
    cl::desc("In dumps, elide literals with more elements than this (0: never; default: "
             "--elide-constants)"),
    cl::Hidden, cl::cat(kilncCategory));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Pin the shape of a model input whose dimensions are unknown (ONNX); a dimension "
             "may be a range MIN..MAX[:OPT] that the executable serves without recompiling"),
    cl::value_desc("NAME=D0xD1x..."), cl::cat(kilncCategory));
static cl::list<std::string> inputValues(
    "input-value",
    cl::desc("Specialise the model to a constant value of an input, read from a .pb or .npy "
             "file (ONNX; an optimisation for a shape, axes or other such tensor that arrives "
             "as an input, which is otherwise read at run time)"),
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
static cl::opt<std::string> cpuLevel(
    "cpu",
    cl::desc("Instruction set of the native code for --target=cpu: native (this machine's "
             "x86-64 level, the default), x86-64, x86-64-v2, x86-64-v3 (AVX2) or x86-64-v4 "
             "(AVX-512); portable x86-64 code is always included beside it"),
    cl::value_desc("LEVEL"), cl::init("native"), cl::cat(kilncCategory));
static cl::opt<driver::Precision> precision(
    "precision", cl::desc("What generated kernels may round (default strict)"),
    cl::init(driver::Precision::Strict),
    cl::values(clEnumValN(driver::Precision::Strict, "strict",
                          "f32 stays f32: f32 matmuls run on CUDA cores"),
               clEnumValN(driver::Precision::Tf32, "tf32",
                          "f32 matmuls may round their inputs to TF32 on Tensor Cores")),
    cl::cat(kilncCategory));
static cl::list<unsigned> mmaPipeline(
    "mma-pipeline",
    cl::desc("The Tensor Core GEMM's pipeline: k-slice depth (32 or 64), stages in flight "
             "(2 to 6), blocks per SM (1 or 2) and optionally the large block tile's width "
             "(128, or 256 for 64x64 warp tiles), e.g. 32,4,2 or 32,3,1,256 (default: kiln's "
             "choice; a tuning aid)"),
    cl::value_desc("K,STAGES,BLOCKS[,N]"), cl::CommaSeparated, cl::cat(kilncCategory));
static cl::list<unsigned> attentionTile(
    "attention-tile",
    cl::desc("The Tensor Core attention kernel's query rows a warp (16 or 32) and blocks per SM "
             "its registers are bounded for (1 to 4), e.g. 32,2 (default: kiln's choice; a "
             "tuning aid)"),
    cl::value_desc("ROWS,BLOCKS"), cl::CommaSeparated, cl::cat(kilncCategory));
static cl::opt<bool> timePhases(
    "time-phases",
    cl::desc("Print the wall time of each phase (parse, graph passes, lowering, code "
             "generation, kernel compilation, writing) and kilnc's peak memory"),
    cl::cat(kilncCategory));
static cl::opt<driver::Implementation> implementation(
    "impl", cl::desc("How matmul steps are computed on a GPU target (default auto)"),
    cl::init(driver::Implementation::Auto),
    cl::values(clEnumValN(driver::Implementation::Auto, "auto",
                          "cuBLASLt where its epilogues fit and the cost model expects it to be "
                          "faster, generated kernels elsewhere"),
               clEnumValN(driver::Implementation::Library, "library",
                          "cuBLASLt wherever its epilogues fit"),
               clEnumValN(driver::Implementation::Generated, "generated",
                          "generated kernels only")),
    cl::cat(kilncCategory));
static cl::opt<bool> noHostFallback(
    "no-host-fallback",
    cl::desc("Refuse to compile when an op would run on the host (--target=cuda and "
             "cuda-emu): list every such op, its location and why, and exit 1"),
    cl::cat(kilncCategory));
static cl::list<std::string> hostOps(
    "host-ops",
    cl::desc("Keep these ops (comma-separated names, e.g. softmax,argsort) on the host "
             "whatever their device code: the reference's answer for them, to tell one "
             "kernel's error from the rest of a model's (--target=cuda and cuda-emu)"),
    cl::value_desc("OPS"), cl::CommaSeparated, cl::cat(kilncCategory));
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
static cl::opt<std::string> grad(
    "grad",
    cl::desc("Differentiate the scalar output LOSS: the executable's outputs are LOSS and "
             "grad.W, the gradient of each trainable weight W (float ONNX initializers, .kg "
             "weights)"),
    cl::value_desc("LOSS"), cl::cat(kilncCategory));
static cl::opt<std::string> trainable(
    "trainable",
    cl::desc("With --grad or --train: differentiate only the weights whose names contain a "
             "match of REGEX (default: every float weight)"),
    cl::value_desc("REGEX"), cl::init(".*"), cl::cat(kilncCategory));
static cl::opt<std::string> train(
    "train",
    cl::desc("Compile one training step of the scalar output LOSS: the trainable weights and "
             "the optimizer's state become states the runtime keeps and updates each run "
             "(kiln-run --steps); the outputs are LOSS and every state's next value"),
    cl::value_desc("LOSS"), cl::cat(kilncCategory));
static cl::opt<std::string> optimizerFlag("optimizer",
                                          cl::desc("With --train: sgd (default), momentum or adam"),
                                          cl::init("sgd"), cl::cat(kilncCategory));
static cl::opt<double> learningRate("lr", cl::desc("With --train: the learning rate (default 0.01)"),
                                    cl::init(0.01), cl::cat(kilncCategory));
static cl::opt<double> weightDecay(
    "weight-decay", cl::desc("With --train: L2 weight decay, D * W added to each gradient"),
    cl::init(0.0), cl::cat(kilncCategory));
static cl::opt<double> memoryBudget(
    "memory-budget",
    cl::desc("With --grad or --train: the most bytes of forward values saved for the backward "
             "pass, as a fraction of those saved recomputing nothing (1, the default); the rest "
             "is recomputed (0: the least that does not raise the peak); reports saved bytes per "
             "layer, recomputed FLOPs and the plan's peak"),
    cl::value_desc("F"), cl::cat(kilncCategory));
static cl::opt<double> foldBudget(
    "fold-budget",
    cl::desc("Seconds constant folding may take (default 60); what is left over is computed "
             "at run time, with a warning at each such op"),
    cl::value_desc("SECONDS"), cl::init(60.0), cl::cat(kilncCategory));
static cl::opt<int64_t> foldBudgetBytes(
    "fold-budget-bytes",
    cl::desc("Bytes of constants folding may create, in all (default 4 GiB)"),
    cl::value_desc("BYTES"), cl::init(int64_t(4) << 30), cl::cat(kilncCategory));
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

/// What -o and --emit ask for.
EmitKind emitKind() {
  if (emit != EmitKind::Auto)
    return emit;
  llvm::StringRef out(outputFilename);
  return out.ends_with(".kx")                        ? EmitKind::Executable
         : (out == "-" || out.ends_with(".mlir")) ? EmitKind::MLIR
                                                    : EmitKind::Program;
}

/// Literals longer than this print elided on a terminal.
constexpr unsigned kTerminalElideLimit = 16;

/// Whether MLIR's own --mlir-elide-elementsattrs-if-larger was given: then
/// it decides, not the terminal default.
bool mlirElideFlagGiven() {
  auto &registered = cl::getRegisteredOptions();
  auto it = registered.find("mlir-elide-elementsattrs-if-larger");
  return it != registered.end() && it->second->getNumOccurrences() > 0;
}

/// --elide-constants: N (elide above N elements) or off (std::nullopt).
LogicalResult parseElideConstants(std::optional<unsigned> &limit) {
  if (elideConstants == "off") {
    limit = std::nullopt;
    return success();
  }
  // 0 would elide every literal; --dump-elide-limit's 0 meant never: take
  // neither meaning.
  unsigned n = 0;
  if (llvm::StringRef(elideConstants).getAsInteger(10, n) || n == 0) {
    llvm::errs() << "kilnc: error: --elide-constants takes a number of elements from 1, or "
                    "'off', got '"
                 << elideConstants << "'\n";
    return failure();
  }
  limit = n;
  return success();
}

/// A comma-separated list flag's numbers as they were given ("32,4,2").
std::string joined(const cl::list<unsigned> &numbers) {
  std::string text;
  for (unsigned n : numbers)
    text += (text.empty() ? "" : ",") + std::to_string(n);
  return text;
}

/// The flags as the driver's options; says what is wrong with them.
LogicalResult readCompileOptions(EmitKind kind, driver::CompileOptions &options) {
  options.target = target;
  options.cpuLevel = cpuLevel;
  if (cpuLevel.getNumOccurrences() && target != driver::Target::CPU) {
    llvm::errs() << "kilnc: error: --cpu applies to --target=cpu\n";
    return failure();
  }
  if (cpuLevel != "native" && !mlir::kiln::isCpuLevel(cpuLevel)) {
    llvm::errs() << "kilnc: error: unknown --cpu level '" << cpuLevel << "' (native, "
                 << ::kiln::cpuLevelNames() << ")\n";
    return failure();
  }
  if (kind == EmitKind::CpuMlir && target != driver::Target::CPU) {
    llvm::errs() << "kilnc: error: --emit=cpu-mlir applies to --target=cpu\n";
    return failure();
  }
  if (!archs.empty())
    options.archs.assign(archs.begin(), archs.end());
  options.precision = precision;
  options.implementation = implementation;
  if (!mmaPipeline.empty()) {
    const cl::list<unsigned> &v = mmaPipeline;
    if ((v.size() != 3 && v.size() != 4) ||
        (v[0] != 32 && v[0] != 64) || v[1] < 2 || v[1] > 6 || v[2] < 1 || v[2] > 2 ||
        (v.size() == 4 && v[3] != 128 && v[3] != 256)) {
      llvm::errs() << "kilnc: error: --mma-pipeline takes K,STAGES,BLOCKS[,N]: K 32 or 64, 2 "
                      "to 6 stages, 1 or 2 blocks per SM, N 128 or 256; got '"
                   << joined(mmaPipeline) << "'\n";
      return failure();
    }
    options.mmaSliceK = v[0];
    options.mmaStages = v[1];
    options.mmaBlocksPerSM = v[2];
    options.mmaTileN = v.size() == 4 ? v[3] : 128;
  }
  if (!attentionTile.empty()) {
    const cl::list<unsigned> &v = attentionTile;
    if (v.size() != 2 || (v[0] != 16 && v[0] != 32) ||
        v[1] < 1 || v[1] > 4) {
      llvm::errs() << "kilnc: error: --attention-tile takes ROWS,BLOCKS: 16 or 32 query rows a "
                      "warp, 1 to 4 blocks per SM; got '"
                   << joined(attentionTile) << "'\n";
      return failure();
    }
    options.attentionRowsPerWarp = v[0];
    options.attentionBlocksPerSM = v[1];
  }
  options.deterministic = deterministic;
  options.noHostFallback = noHostFallback;
  options.hostOps.assign(hostOps.begin(), hostOps.end());
  if (workspaceLimit.getNumOccurrences()) {
    std::optional<int64_t> bytes = driver::parseByteSize(workspaceLimit);
    if (!bytes) {
      llvm::errs() << "kilnc: error: --workspace-limit takes bytes (optionally with KiB, MiB or "
                      "GiB), got '"
                   << workspaceLimit << "'\n";
      return failure();
    }
    options.workspaceLimit = *bytes;
  }
  options.tuningCache = tuningCache;
  options.autotune = autotuneFlag;
  options.emuSanitize = emuSanitize;
  options.emuProfile = emuProfile;
  options.optimize = !noOptimize;
  options.fusion = !noFusion;
  options.lower = kind == EmitKind::Plan || kind == EmitKind::Executable ||
                  kind == EmitKind::Program || kind == EmitKind::Cuda ||
                  kind == EmitKind::CpuMlir || kernelReport;
  options.schedule = schedule;
  if (maxStreams.getNumOccurrences())
    options.maxStreams = maxStreams;
  options.fusionReport = fusionReport;
  // (Flags of the training step alone; the rest verifyCompileOptions checks.)
  if (grad.getNumOccurrences() && train.getNumOccurrences()) {
    llvm::errs() << "kilnc: error: --grad and --train exclude each other (--train differentiates "
                    "its loss itself)\n";
    return failure();
  }
  if (!train.getNumOccurrences() && (optimizerFlag.getNumOccurrences() ||
                                     learningRate.getNumOccurrences() ||
                                     weightDecay.getNumOccurrences())) {
    llvm::errs() << "kilnc: error: --optimizer, --lr and --weight-decay apply with --train\n";
    return failure();
  }
  options.gradLoss = grad;
  options.trainable = trainable;
  options.train = train.getNumOccurrences() > 0;
  if (options.train)
    options.gradLoss = train;
  if ((options.train || grad.getNumOccurrences()) && options.gradLoss.empty()) {
    llvm::errs() << "kilnc: error: --grad and --train take the name of a scalar output\n";
    return failure();
  }
  options.optimizer = optimizerFlag;
  options.learningRate = learningRate;
  options.weightDecay = weightDecay;
  if (memoryBudget.getNumOccurrences())
    options.memoryBudget = memoryBudget;
  options.foldBudgetSeconds = foldBudget;
  options.foldBudgetBytes = foldBudgetBytes;
  options.kernelReport = kernelReport;
  options.printIrAfterAll = printIrAfterAll;
  options.dumpIrDir = dumpIrDir;
  // Dumps keep whole literals, so that they read back, unless asked; the
  // IR printed to a terminal after every pass is elided like stdout's.
  if (dumpElideLimit.getNumOccurrences()) {
    if (dumpElideLimit > 0)
      options.dumpElideLimit = dumpElideLimit.getValue();
  } else if (elideConstants.getNumOccurrences() &&
             failed(parseElideConstants(options.dumpElideLimit))) {
    return failure();
  }
  options.printElideLimit = options.dumpElideLimit;
  if (!dumpElideLimit.getNumOccurrences() && !elideConstants.getNumOccurrences() &&
      !mlirElideFlagGiven() && llvm::sys::Process::StandardErrIsDisplayed())
    options.printElideLimit = kTerminalElideLimit;
  options.dumpDot = dumpDot;
  std::string problem = driver::verifyCompileOptions(options);
  if (!problem.empty()) {
    llvm::errs() << "kilnc: error: " << problem << "\n";
    return failure();
  }
  return success();
}

/// How literals print in the output: elided above 16 elements on a
/// terminal, where nobody reads megabytes of weights; whole in a file or a
/// pipe, which may be read back.
LogicalResult outputElideLimit(std::optional<unsigned> &limit) {
  if (elideConstants.getNumOccurrences())
    return parseElideConstants(limit);
  if (outputFilename == "-" && !mlirElideFlagGiven() &&
      llvm::sys::Process::StandardOutIsDisplayed())
    limit = kTerminalElideLimit;
  return success();
}

/// The kiln-standalone binary that --emit=program appends the executable
/// to: --standalone-stub, else next to kilnc.
std::unique_ptr<llvm::MemoryBuffer> readStandaloneStub(const char *argv0) {
  std::string path = standaloneStub;
  if (path.empty()) {
    llvm::SmallString<256> dir(llvm::sys::path::parent_path(llvm::sys::fs::getMainExecutable(
        argv0, reinterpret_cast<void *>(&readStandaloneStub))));
    for (const char *candidate : {"kiln-standalone", "../kiln-run/kiln-standalone"}) {
      llvm::SmallString<256> p(dir);
      llvm::sys::path::append(p, candidate);
      if (llvm::sys::fs::exists(p)) {
        path = std::string(p);
        break;
      }
    }
  }
  auto buffer =
      llvm::MemoryBuffer::getFile(path.empty() ? "kiln-standalone" : path, /*IsText=*/false);
  if (!buffer) {
    llvm::errs() << "kilnc: error: cannot read the standalone-program stub '"
                 << (path.empty() ? "kiln-standalone" : path)
                 << "': " << buffer.getError().message() << "; pass --standalone-stub\n";
    return nullptr;
  }
  return std::move(*buffer);
}

/// Reads the model: kiln IR (.mlir), ONNX (.onnx, with --input-shape and
/// --input-value) or .kg. Errors are reported; returns null then.
OwningOpRef<ModuleOp> readModel(llvm::SourceMgr &sourceMgr, MLIRContext &context) {
  if (llvm::StringRef(inputFilename).ends_with(".mlir")) {
    std::string message;
    auto file = openInputFile(inputFilename, &message);
    if (!file) {
      llvm::errs() << "kilnc: error: " << message << "\n";
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    return parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  if (llvm::StringRef(inputFilename).ends_with(".onnx")) {
    ::kiln::frontend::OnnxImportOptions options;
    for (const std::string &pin : inputShapes) {
      llvm::StringRef name, dims;
      std::tie(name, dims) = llvm::StringRef(pin).rsplit('=');
      std::vector<::kiln::frontend::DimSpec> shape;
      std::string error;
      if (name.empty() || !::kiln::frontend::parseShapeSpec(dims.str(), shape, error)) {
        llvm::errs() << "kilnc: error: --input-shape takes NAME=D0xD1x... (each D a size N or "
                        "a range MIN..MAX[:OPT]), got '"
                     << pin << "'" << (error.empty() ? "" : ": " + error) << "\n";
        return nullptr;
      }
      options.inputShapes[name.str()] = shape;
    }
    for (const std::string &pin : inputValues) {
      auto [name, file] = llvm::StringRef(pin).split('=');
      if (name.empty() || file.empty()) {
        llvm::errs() << "kilnc: error: --input-value takes NAME=FILE, got '" << pin << "'\n";
        return nullptr;
      }
      options.inputValues[name.str()] = file.str();
    }
    return ::kiln::frontend::importOnnxFile(inputFilename, &context, options);
  }
  if (!inputShapes.empty() || !inputValues.empty()) {
    llvm::errs() << "kilnc: error: --input-shape and --input-value apply to ONNX models; a "
                    ".kg model states its inputs\n";
    return nullptr;
  }
  return ::kiln::frontend::parseKgFile(inputFilename, sourceMgr, &context);
}

/// Writes the .kx executable of the module's one function, or the
/// standalone program (the stub with the executable appended).
LogicalResult emitExecutable(ModuleOp module, EmitKind kind, driver::Compilation &compilation,
                             const llvm::MemoryBuffer *stub, driver::PhaseClock &clock,
                             llvm::raw_ostream &os) {
  func::FuncOp plan = driver::modelFunction(module, "an executable");
  if (!plan)
    return failure();
  mlir::kiln::DeviceCode code;
  if (failed(compilation.buildDeviceCode(plan, code)))
    return failure();
  std::string kx;
  llvm::raw_string_ostream kxStream(kx);
  if (failed(mlir::kiln::writeExecutable(plan, kxStream, code)))
    return failure();
  clock.mark("serialize");
  kxStream.flush();
  if (kind == EmitKind::Program) {
    // stub | executable | size (u64, little-endian) | "KILNEMBD"
    os << stub->getBuffer() << kx;
    uint64_t size = kx.size();
    os.write(reinterpret_cast<const char *>(&size), sizeof(size));
    os << "KILNEMBD";
  } else {
    os << kx;
  }
  return success();
}

void printVersion(llvm::raw_ostream &os) {
  os << "kilnc, the kiln model compiler\n  built with LLVM and MLIR " LLVM_VERSION_STRING "\n";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  driver::PhaseClock clock;
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // A compiler driver's --help lists its own flags; LLVM's and MLIR's
  // hundreds still work (--mlir-timing, ...) but stay out of sight.
  cl::HideUnrelatedOptions(kilncCategory);
  cl::SetVersionPrinter(printVersion);
  cl::ParseCommandLineOptions(argc, argv, "kiln model compiler\n");

  // The flags, before any work.
  EmitKind kind = emitKind();
  driver::CompileOptions options;
  if (failed(readCompileOptions(kind, options)))
    return 1;
  std::optional<unsigned> elideLimit;
  if (failed(outputElideLimit(elideLimit)))
    return 1;
  if (kind == EmitKind::Cuda && outputFilename == "-") {
    llvm::errs() << "kilnc: error: --emit=cuda writes one file per kernel: name a folder with -o\n";
    return 1;
  }
  std::unique_ptr<llvm::MemoryBuffer> stub;
  if (kind == EmitKind::Program && !(stub = readStandaloneStub(argv[0])))
    return 1;

  // Read the model.
  MLIRContext context;
  // Diagnostics point into the model file; the IR of the op is noise there.
  context.printOpOnDiagnostic(false);
  context.loadDialect<mlir::kiln::KilnDialect, mlir::kiln::exec::ExecDialect,
                      func::FuncDialect>();
  llvm::SourceMgr sourceMgr;
  driver::DiagnosticPrinter diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = readModel(sourceMgr, context);
  if (!module)
    return 1;
  clock.mark("parse");

  // Compile.
  driver::Compilation compilation(options, clock);
  if (failed(compilation.run(*module, inputFilename)))
    return 1;

  // Emit.
  if (kind == EmitKind::Cuda) {
    return failed(driver::writeKernelSources(*module, options, outputFilename)) ? 1 : 0;
  }
  std::string message;
  auto output = openOutputFile(outputFilename, &message);
  if (!output) {
    llvm::errs() << "kilnc: error: " << message << "\n";
    return 1;
  }
  if (kind == EmitKind::CpuMlir) {
    func::FuncOp plan = driver::modelFunction(*module, "--emit=cpu-mlir");
    if (!plan || failed(mlir::kiln::writeCpuKernels(plan, output->os())))
      return 1;
  } else if (kind == EmitKind::Executable || kind == EmitKind::Program) {
    if (failed(emitExecutable(*module, kind, compilation, stub.get(), clock, output->os())))
      return 1;
  } else {
    module->print(output->os(), driver::printingFlags(elideLimit));
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
  clock.mark("write");
  if (timePhases)
    clock.print(llvm::errs());
  // Only a file kilnc wrote becomes executable, never a device or a pipe
  // named by -o (as root, -o /dev/null would change /dev/null for all).
  if (kind == EmitKind::Program && outputFilename != "-" &&
      llvm::sys::fs::is_regular_file(outputFilename))
    llvm::sys::fs::setPermissions(outputFilename, llvm::sys::fs::all_read |
                                                      llvm::sys::fs::all_exe |
                                                      llvm::sys::fs::owner_write);
  return 0;
}
