//===- IRDumps.cpp - the IR after parsing and after every pass ------------===//

#include "kiln/Driver/IRDumps.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using namespace mlir;

namespace kiln {
namespace driver {

OpPrintingFlags printingFlags(std::optional<unsigned> elideLimit) {
  OpPrintingFlags flags;
  if (elideLimit)
    flags.elideLargeElementsAttrs(*elideLimit);
  return flags;
}

/// Writes the module as DIR/NN-<stage>.mlir, NN counting up from 00.
class DumpToDirectory : public PassInstrumentation {
public:
  DumpToDirectory(std::string dir, OpPrintingFlags flags) : dir(std::move(dir)), flags(flags) {}

  /// Writes the module holding `op`; says why on stderr if it cannot.
  LogicalResult writeDump(Operation *op, llvm::StringRef stage);

  void runAfterPass(Pass *pass, Operation *op) override;

private:
  std::string dir;
  OpPrintingFlags flags;
  unsigned index = 0;
};

LogicalResult DumpToDirectory::writeDump(Operation *op, llvm::StringRef stage) {
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
  op->print(os, flags);
  return success();
}

void DumpToDirectory::runAfterPass(Pass *pass, Operation *op) {
  // Pass adaptors (the nesting of the pipeline) have no argument.
  if (!pass->getArgument().empty())
    (void)writeDump(op, pass->getArgument());
}

/// Lets each pass manager own an instrumentation that feeds the one
/// numbered dump they share.
class ForwardTo : public PassInstrumentation {
public:
  explicit ForwardTo(PassInstrumentation *target) : target(target) {}
  void runAfterPass(Pass *pass, Operation *op) override { target->runAfterPass(pass, op); }

private:
  PassInstrumentation *target;
};

IRDumps::IRDumps(const CompileOptions &options) : options(options) {}

IRDumps::~IRDumps() = default;

LogicalResult IRDumps::dumpParsed(ModuleOp module, llvm::StringRef inputName) {
  if (!options.dumpIrDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(options.dumpIrDir)) {
      llvm::errs() << "kilnc: error: cannot create '" << options.dumpIrDir << "': " << ec.message()
                   << "\n";
      return failure();
    }
    toDirectory =
        std::make_unique<DumpToDirectory>(options.dumpIrDir, printingFlags(options.dumpElideLimit));
    if (failed(toDirectory->writeDump(module, "input")))
      return failure();
  }
  if (options.printIrAfterAll) {
    llvm::errs() << "// -----// IR Dump After Parse (" << inputName << ") //----- //\n";
    module->print(llvm::errs(), printingFlags(options.printElideLimit));
    llvm::errs() << "\n";
  }
  return success();
}

void IRDumps::instrument(PassManager &pm) {
  if (options.printIrAfterAll) {
    // Printing the whole module after a function pass needs the passes to
    // run one function at a time.
    pm.getContext()->disableMultithreading();
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
        /*printAfterOnlyOnFailure=*/false, llvm::errs(), printingFlags(options.printElideLimit));
  }
  if (toDirectory) {
    pm.getContext()->disableMultithreading();
    pm.addInstrumentation(std::make_unique<ForwardTo>(toDirectory.get()));
  }
}

} // namespace driver
} // namespace kiln
