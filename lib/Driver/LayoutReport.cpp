//===- LayoutReport.cpp - layout conversions at the model's boundary ------===//

#include "kiln/Driver/Reports.h"

#include "kiln/Driver/Diagnostics.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/KilnTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;

namespace kiln {
namespace driver {

void reportLayouts(ModuleOp module, llvm::raw_ostream &os) {
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
    os << "kilnc: layouts @" << func.getName() << ": " << conversions.size()
       << (conversions.size() == 1 ? " conversion" : " conversions") << " ("
       << llvm::join(conversions, "; ") << "), " << bytes << " bytes moved\n";
  }
}

} // namespace driver
} // namespace kiln
