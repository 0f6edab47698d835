//===- OpClasses.cpp - families of kiln ops -------------------------------===//

#include "kiln/IR/OpClasses.h"

#include "kiln/IR/KilnOps.h"

using namespace mlir;
using namespace mlir::kiln;

bool mlir::kiln::isElementwiseOp(Operation *op) {
  return llvm::isa<
      // unary
      NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ReluOp, GeluOp, ErfOp,
      NotOp, FloorOp, CeilOp, RoundOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp,
      CoshOp, AsinhOp, AcoshOp, AtanhOp, SignOp,
      // binary, comparisons, select, cast
      AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, AndOp, OrOp, ModOp, EqOp, NeOp, LtOp,
      LeOp, GtOp, GeOp, SelectOp, CastOp,
      // a per-channel affine map at inference
      BatchNormOp>(op);
}

bool mlir::kiln::isRowReductionOp(Operation *op) {
  return llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, SoftmaxOp,
                   LogSoftmaxOp, LayerNormOp, GlobalAvgPoolOp>(op);
}
