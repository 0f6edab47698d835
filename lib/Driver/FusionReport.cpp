//===- FusionReport.cpp - kernels and regions after fusion ----------------===//

#include "kiln/Driver/Reports.h"

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

using namespace mlir;

namespace kiln {
namespace driver {

void reportFusion(ModuleOp module, llvm::raw_ostream &os) {
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
    os << "kilnc: fusion @" << func.getName() << ": " << ops << " graph ops in " << kernels
       << " kernels:";
    for (const auto &[kind, count] : regions)
      os << " " << kind << " " << count << ",";
    os << " unfused " << unfused << "\n";
  }
}

} // namespace driver
} // namespace kiln
