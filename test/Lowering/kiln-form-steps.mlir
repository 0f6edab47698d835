// RUN: kiln-opt %s -kiln-form-steps | FileCheck %s

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>

// Each compute op becomes one step holding it; constants and weights stay
// outside (they are the executable's weights) and a repeated operand is one
// step input.
// CHECK-LABEL: func.func @steps
// CHECK-NEXT: %[[W:.*]] = kiln.weight "w"
// CHECK-NEXT: %[[C:.*]] = kiln.constant
// CHECK-NEXT: %[[S0:.*]] = exec.step(%arg0, %[[W]]) : (tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4xf32, #kiln.enc<row_major, cpu>>, %[[B:.*]]: tensor<4xf32, #kiln.enc<row_major, cpu>>):
// CHECK-NEXT: %[[M:.*]] = kiln.mul %[[A]], %[[B]]
// CHECK-NEXT: exec.yield %[[M]] : tensor<4xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: }
// CHECK-NEXT: %[[S1:.*]] = exec.step(%[[S0]]) : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4xf32, #kiln.enc<row_major, cpu>>):
// CHECK-NEXT: kiln.add %[[X]], %[[X]]
// CHECK: %[[S2:.*]] = exec.step(%[[S1]], %[[C]])
// CHECK: kiln.sub
// CHECK: return %[[S2]]
func.func @steps(%x: !v) -> !v {
  %w = kiln.weight "w" = dense<2.0> : tensor<4xf32> : !v
  %c = kiln.constant dense<1.0> : tensor<4xf32> : !v
  %0 = kiln.mul %x, %w : (!v, !v) -> !v
  %1 = kiln.add %0, %0 : (!v, !v) -> !v
  %2 = kiln.sub %1, %c : (!v, !v) -> !v
  return %2 : !v
}

// A function with nothing to compute gets no steps.
// CHECK-LABEL: func.func @identity
// CHECK-NOT: exec.step
func.func @identity(%x: !v) -> !v {
  return %x : !v
}
