// RUN: kiln-opt %s -kiln-graph-pipeline | FileCheck %s
// RUN: kiln-opt %s -kiln-graph-pipeline -mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=PASSES

// The default pipeline: algebra, constant folding, CSE and DCE together.
// PASSES: IR Dump After Canonicalizer (canonicalize)
// PASSES: IR Dump After KilnConstantFold (kiln-constant-fold)
// PASSES: IR Dump After Canonicalizer (canonicalize)
// PASSES: IR Dump After CSE (cse)
// PASSES: IR Dump After KilnDeadCodeElimination (kiln-dce)

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>

// (x * 1 + (2 + 3)) computed twice: one add of x and a folded constant 5.
// CHECK-LABEL: func.func @everything
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<5.000000e+00>
// CHECK-NEXT: %[[A:.*]] = kiln.add %arg0, %[[C]]
// CHECK-NEXT: return %[[A]], %[[A]]
func.func @everything(%x: !v) -> (!v, !v) {
  %one = kiln.constant dense<1.0> : tensor<4xf32> : !v
  %two = kiln.constant dense<2.0> : tensor<4xf32> : !v
  %three = kiln.weight "three" = dense<3.0> : tensor<4xf32> : !v
  %five = kiln.add %two, %three : (!v, !v) -> !v
  %0 = kiln.mul %x, %one : (!v, !v) -> !v
  %1 = kiln.add %0, %five : (!v, !v) -> !v
  %2 = kiln.add %x, %five : (!v, !v) -> !v
  %dead = kiln.exp %2 : (!v) -> !v
  return %1, %2 : !v, !v
}
