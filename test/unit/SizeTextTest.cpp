//===- SizeTextTest.cpp - symbolic sizes as the kernels' C ----------------===//
//
// A kernel over symbolic sizes writes each size as C over its size
// parameters (sizeText): divisions and remainders must floor, as the
// runtime evaluates sizes, also where a part may be negative.

#include "../../lib/CodeGen/ElementEmitter.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;

namespace {

TEST(SizeText, ConstantsAndSymbols) {
  MLIRContext context;
  AffineExpr s0 = getAffineSymbolExpr(0, &context), s1 = getAffineSymbolExpr(1, &context);
  EXPECT_EQ(kiln::sizeText(getAffineConstantExpr(768, &context)), "768LL");
  EXPECT_EQ(kiln::sizeText(s0 * s1 * 64), "((s0 * s1) * 64LL)");
  EXPECT_EQ(kiln::sizeText(s1 + 1), "(s1 + 1LL)");
}

TEST(SizeText, DivisionOfWhatIsNeverNegativeIsC) {
  MLIRContext context;
  AffineExpr s0 = getAffineSymbolExpr(0, &context);
  EXPECT_EQ(kiln::sizeText((s0 + 3).floorDiv(4)), "((s0 + 3LL) / 4LL)");
  EXPECT_EQ(kiln::sizeText(s0.ceilDiv(4)), "((s0 + 4LL - 1LL) / 4LL)");
  EXPECT_EQ(kiln::sizeText(s0 % 4), "(s0 % 4LL)");
}

TEST(SizeText, DivisionOfWhatMayBeNegativeFloors) {
  // A strided window's output, (s0 - 3) floordiv 2 + 1, at s0 = 2 is
  // floor(-1 / 2) + 1 = 0 elements; C's -1 / 2 + 1 would be 1.
  MLIRContext context;
  AffineExpr s0 = getAffineSymbolExpr(0, &context);
  EXPECT_EQ(kiln::sizeText((s0 - 3).floorDiv(2) + 1),
            "(kiln_floordiv_size((s0 + -3LL), 2LL) + 1LL)");
  EXPECT_EQ(kiln::sizeText((s0 - 3).ceilDiv(2)), "(-kiln_floordiv_size(-(s0 + -3LL), 2LL))");
  EXPECT_EQ(kiln::sizeText((s0 - 3) % 2),
            "((s0 + -3LL) - 2LL * kiln_floordiv_size((s0 + -3LL), 2LL))");
  // And the kernel carries the helper's definition when it calls it.
  std::string helpers = kiln::integerHelpersFor("n = kiln_floordiv_size(a, 2LL);");
  EXPECT_NE(helpers.find("long long kiln_floordiv_size(long long a, long long b)"),
            std::string::npos);
  EXPECT_EQ(kiln::integerHelpersFor("n = a / 2LL;"), "");
}

} // namespace
