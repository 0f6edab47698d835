//===- OpFamiliesTest.cpp - every kiln op declares what it is ---------------===//
//
// Fusion, placement and the kernel emitters decide by an op's family
// (KilnTraits.td). An op added without one would silently have no device
// code: every registered kiln op is in a family, or is one of the few that
// are classified by name (contractions, a sort, literals, transfers,
// regions).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnDialect.h"
#include "kiln/IR/KilnTraits.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

#include <set>
#include <string>

using namespace mlir;

namespace {

TEST(OpFamilies, EveryOpIsClassified) {
  MLIRContext context;
  context.loadDialect<kiln::KilnDialect>();
  const std::set<std::string> byName = {
      "kiln.matmul", "kiln.conv2d",                    // contractions: tiled kernels, libraries
      "kiln.constant", "kiln.weight", "kiln.transfer", // literals and copies
      "kiln.iota",                                     // indices of a run-time length
      "kiln.fusion", "kiln.yield",                     // regions
      "kiln.argsort",                                  // a sort: a kernel of its own
      "kiln.take_prefix", // a length read between steps: a step of its own, on the host
      "kiln.non_max_suppression", // a greedy selection: the host's
      "kiln.gradient",            // replaced by graph ops before any other pass
  };
  int kilnOps = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "kiln")
      continue;
    ++kilnOps;
    bool elementwise = name.hasTrait<OpTrait::kiln::ElementwiseFamily>();
    bool movement = name.hasTrait<OpTrait::kiln::DataMovementFamily>();
    bool window = name.hasTrait<OpTrait::kiln::WindowFamily>();
    bool row = name.hasTrait<OpTrait::kiln::RowReductionFamily>();
    bool named = byName.count(name.getStringRef().str()) != 0;
    EXPECT_TRUE(elementwise || movement || window || row || named)
        << name.getStringRef().str() << " declares no family";
    // Elementwise ops and data movement are nothing else.
    EXPECT_LE(int(elementwise) + int(movement) + int(window || row) + int(named), 1)
        << name.getStringRef().str() << " is in more than one family";
  }
  EXPECT_GT(kilnOps, 60);
}

TEST(OpFamilies, RowReductionsAreWindowsOrLayerNorm) {
  // A row reduction over leading axes (or of integers) runs as a window, so
  // every row reduction but layer_norm (always over the trailing axes) is
  // a window too.
  MLIRContext context;
  context.loadDialect<kiln::KilnDialect>();
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (name.hasTrait<OpTrait::kiln::RowReductionFamily>() &&
        name.getStringRef() != "kiln.layer_norm")
      EXPECT_TRUE(name.hasTrait<OpTrait::kiln::WindowFamily>()) << name.getStringRef().str();
}

} // namespace
