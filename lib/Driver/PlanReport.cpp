//===- PlanReport.cpp - steps, streams and memory of a plan ---------------===//

#include "kiln/Driver/Reports.h"

#include "kiln/Exec/ExecOps.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicSizes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <cstdint>

using namespace mlir;

namespace kiln {
namespace driver {

/// a + b, or INT64_MAX past it (sizes at the ranges' largest values).
static int64_t addSaturated(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

void reportPlans(ModuleOp module, llvm::raw_ostream &os) {
  for (auto func : module.getOps<func::FuncOp>()) {
    int64_t steps = 0, events = 0, moved = 0;
    SmallVector<mlir::kiln::SizeSymbol> symbols = mlir::kiln::getSizeSymbols(func);
    auto bytes = [&](Type type) { return mlir::kiln::tensorBytes(type, symbols); };
    func.walk([&](mlir::kiln::exec::StepOp step) {
      ++steps;
      events += step.getEvent().has_value();
      // What the step's kernel reads and writes in memory (a splat
      // constant is a literal, not a read).
      for (Value input : step.getInputs()) {
        auto constant = input.getDefiningOp<mlir::kiln::ConstantOp>();
        auto dense = constant ? llvm::dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
        if (!dense || !dense.isSplat())
          moved = addSaturated(moved, bytes(input.getType()));
      }
      for (Type t : step.getResultTypes())
        moved = addSaturated(moved, bytes(t));
    });
    auto attr = [&](llvm::StringRef name) {
      auto value = func->getAttrOfType<IntegerAttr>(name);
      return value ? value.getInt() : 0;
    };
    int64_t workspace = attr("exec.workspace_bytes");
    int64_t peak = attr("exec.arena_bytes") - workspace, unshared = attr("exec.unshared_bytes");
    int64_t streams = attr("exec.streams");
    os << "kilnc: plan @" << func.getName() << ": " << steps << " steps on " << streams
       << (streams == 1 ? " stream, " : " streams, ") << events
       << (events == 1 ? " event" : " events") << "; arena " << peak << " bytes peak vs "
       << unshared << " bytes unshared";
    if (unshared > 0)
      os << " (" << (100 * peak + unshared / 2) / unshared << "%)";
    if (workspace > 0)
      os << ", plus " << workspace << " bytes of library workspace";
    os << "; " << moved << " bytes moved\n";
  }
}

} // namespace driver
} // namespace kiln
