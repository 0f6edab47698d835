// RUN: kiln-opt %s -kiln-constant-fold | FileCheck %s

// A huge splat operand is not materialised even when the result is small.
// CHECK-LABEL: func.func @huge_splat_operand
// CHECK: kiln.reduce_sum
func.func @huge_splat_operand() -> tensor<f32, #kiln.enc<row_major, cpu>> {
  %w = kiln.weight "w" = dense<0.5> : tensor<100000x100000xf32> : tensor<100000x100000xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.reduce_sum %w {axes = array<i64: 0, 1>} : (tensor<100000x100000xf32, #kiln.enc<row_major, cpu>>) -> tensor<f32, #kiln.enc<row_major, cpu>>
  return %0 : tensor<f32, #kiln.enc<row_major, cpu>>
}
