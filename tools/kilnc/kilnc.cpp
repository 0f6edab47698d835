//===- kilnc.cpp - the kiln compiler driver -------------------------------===//
//
//   kilnc MODEL.kg [--print-ir-after-all] [--dump-ir-dir=DIR] [--emit=mlir]
//                  [-o FILE]
//
// Parses a model (.kg, or kiln IR in .mlir), runs the default graph
// pipeline and writes the optimised IR. Every diagnostic carries the
// model file's file:line:col and shows the offending line.
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/KgParser.h"
#include "kiln/IR/KilnDialect.h"
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
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory kilncCategory("kilnc options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.kg | model.mlir>"),
                                          cl::Required, cl::cat(kilncCategory));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                           cl::value_desc("file"), cl::init("-"),
                                           cl::cat(kilncCategory));
enum class EmitKind { MLIR };
static cl::opt<EmitKind> emit("emit", cl::desc("What to write"), cl::init(EmitKind::MLIR),
                              cl::values(clEnumValN(EmitKind::MLIR, "mlir",
                                                    "the optimised Graph IR")),
                              cl::cat(kilncCategory));
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
static cl::opt<bool> noOptimize("O0", cl::desc("Skip the graph pipeline"),
                                cl::cat(kilncCategory));

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

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "kiln model compiler\n");

  MLIRContext context;
  context.loadDialect<mlir::kiln::KilnDialect, func::FuncDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

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
  } else {
    module = ::kiln::frontend::parseKgFile(inputFilename, sourceMgr, &context);
  }
  if (!module)
    return 1;

  std::unique_ptr<DumpToDirectory> dumper;
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

  // Optimise.
  if (!noOptimize) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    applyDefaultTimingPassManagerCLOptions(pm);
    if (printIrAfterAll) {
      // Printing the whole module after a function pass needs the passes to
      // run one function at a time.
      context.disableMultithreading();
      pm.enableIRPrinting(
          /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
          /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
          /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
          /*printAfterOnlyOnFailure=*/false, llvm::errs(), dumpFlags());
    }
    if (dumper) {
      context.disableMultithreading();
      pm.addInstrumentation(std::move(dumper));
    }
    mlir::kiln::buildDefaultGraphPipeline(pm);
    if (failed(pm.run(*module)))
      return 1;
  }

  // Emit.
  std::string message;
  auto output = openOutputFile(outputFilename, &message);
  if (!output) {
    llvm::errs() << "kilnc: error: " << message << "\n";
    return 1;
  }
  switch (emit) {
  case EmitKind::MLIR:
    module->print(output->os());
    output->os() << "\n";
    break;
  }
  output->keep();
  return 0;
}
