//===- FusionLegalityTest.cpp - the rules every fusion region obeys -------===//
//
// checkLegality is what keeps the passes honest; some of its refusals (a
// cycle, mixed devices) cannot arise from today's passes' own growth rules,
// so they are tested here directly on hand-built groups.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Transforms/Fusion/FusionUtils.h"

#include "kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::fusion;

namespace {

class FusionLegality : public ::testing::Test {
protected:
  FusionLegality() { context.loadDialect<KilnDialect, func::FuncDialect>(); }

  /// Parses a function; returns its ops (without the return) in order.
  std::vector<Operation *> parse(const char *body) {
    std::string text = std::string("!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>\n"
                                   "!g = tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>\n") +
                       body;
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module);
    std::vector<Operation *> ops;
    for (auto func : module->getOps<func::FuncOp>())
      for (Operation &op : func.getBody().front().without_terminator())
        ops.push_back(&op);
    return ops;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(FusionLegality, AcceptsAChain) {
  auto ops = parse(R"(
    func.func @f(%x: !t) -> !t {
      %0 = kiln.neg %x : (!t) -> !t
      %1 = kiln.exp %0 : (!t) -> !t
      return %1 : !t
    })");
  Group group;
  group.moved.insert(ops[0]);
  group.moved.insert(ops[1]);
  EXPECT_EQ(checkLegality(group, Limits{}), "");
  EXPECT_EQ(countInputs(group), 1);
}

TEST_F(FusionLegality, RefusesACycle) {
  // %0 leaves the group, goes through %1 (outside) and comes back into %2.
  auto ops = parse(R"(
    func.func @f(%x: !t) -> !t {
      %0 = kiln.neg %x : (!t) -> !t
      %1 = kiln.exp %0 : (!t) -> !t
      %2 = kiln.add %0, %1 : (!t, !t) -> !t
      return %2 : !t
    })");
  Group group;
  group.moved.insert(ops[0]);
  group.moved.insert(ops[2]);
  EXPECT_EQ(checkLegality(group, Limits{}),
            "a value would leave the region and come back through an op outside it");
  // Duplicating %0 instead breaks the cycle: the original stays for %1.
  Group duplicated;
  duplicated.duplicated.insert(ops[0]);
  duplicated.moved.insert(ops[2]);
  EXPECT_EQ(checkLegality(duplicated, Limits{}), "");
}

TEST_F(FusionLegality, RefusesMixedDevices) {
  auto ops = parse(R"(
    func.func @f(%x: !t) -> !g {
      %0 = kiln.neg %x : (!t) -> !t
      %1 = kiln.transfer %0 {to = "cuda:0"} : (!t) -> !g
      %2 = kiln.relu %1 : (!g) -> !g
      return %2 : !g
    })");
  Group group;
  group.moved.insert(ops[0]);
  group.moved.insert(ops[2]);
  EXPECT_EQ(checkLegality(group, Limits{}),
            "its ops are on different devices (cpu and cuda:0)");
  EXPECT_FALSE(isFusionCandidate(ops[1])) << "a transfer is never fused";
}

TEST_F(FusionLegality, BoundsOpsInputsAndLiveValues) {
  // Four independent negations summed pairwise: at the widest point four
  // values are alive at once.
  auto ops = parse(R"(
    func.func @f(%a: !t, %b: !t, %c: !t, %d: !t) -> !t {
      %0 = kiln.neg %a : (!t) -> !t
      %1 = kiln.neg %b : (!t) -> !t
      %2 = kiln.neg %c : (!t) -> !t
      %3 = kiln.neg %d : (!t) -> !t
      %4 = kiln.add %0, %1 : (!t, !t) -> !t
      %5 = kiln.add %2, %3 : (!t, !t) -> !t
      %6 = kiln.add %4, %5 : (!t, !t) -> !t
      return %6 : !t
    })");
  Group group;
  for (Operation *op : ops)
    group.moved.insert(op);
  EXPECT_EQ(checkLegality(group, Limits{}), "");
  EXPECT_EQ(checkLegality(group, Limits{6, 12, 16}),
            "the region would hold 7 ops (max-ops=6)");
  EXPECT_EQ(checkLegality(group, Limits{32, 3, 16}),
            "the region would take 4 inputs (max-inputs=3)");
  EXPECT_EQ(checkLegality(group, Limits{32, 12, 3}),
            "the region would keep 4 values alive at once (max-live=3)");
}

TEST_F(FusionLegality, ClassifiesOps) {
  auto ops = parse(R"(
    func.func @f(%x: !t, %w: tensor<8x8xf32, #kiln.enc<row_major, cpu>>) -> !t {
      %0 = kiln.add %x, %x : (!t, !t) -> !t
      %1 = kiln.exp %0 : (!t) -> !t
      %2 = kiln.matmul %1, %w : (!t, tensor<8x8xf32, #kiln.enc<row_major, cpu>>) -> !t
      %3 = kiln.softmax %2 {axis = 1 : i64} : (!t) -> !t
      %4 = kiln.reshape %3 {shape = array<i64: 32>} : (!t) -> tensor<32xf32, #kiln.enc<row_major, cpu>>
      return %3 : !t
    })");
  EXPECT_TRUE(isElementwise(ops[0]) && isCheapToDuplicate(ops[0]));
  EXPECT_TRUE(isElementwise(ops[1]) && !isCheapToDuplicate(ops[1]));
  EXPECT_FALSE(isLoopFusible(ops[2]));
  EXPECT_TRUE(isReductionAnchor(ops[3]) && !isLoopFusible(ops[3]));
  EXPECT_TRUE(isFreeDataMovement(ops[4]) && isCheapToDuplicate(ops[4]));
}

} // namespace
