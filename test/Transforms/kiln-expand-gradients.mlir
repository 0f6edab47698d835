// RUN: kiln-opt %s -split-input-file -kiln-expand-gradients | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-expand-gradients -kiln-constant-fold -canonicalize | FileCheck %s --check-prefix=FOLD

// kiln-expand-gradients replaces each kiln.gradient (ONNX's Gradient) by
// the vector-Jacobian products of the ops computing its value, seeded with
// ones, with respect to its operands.

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// d/dx sum(x * w) = w, d/dw = x; an operand the value does not depend on
// (%z) gets zeros. The op is gone.
// CHECK-LABEL: func.func @product
// CHECK-NOT: kiln.gradient
// CHECK: kiln.constant dense<1.000000e+00>
// CHECK-DAG: %[[DX:.*]] = kiln.mul %{{.*}}, %arg1
// CHECK-DAG: %[[DW:.*]] = kiln.mul %{{.*}}, %arg0
// CHECK: %[[ZEROS:.*]] = kiln.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: return %[[DX]], %[[DW]], %[[ZEROS]]
func.func @product(%x: !v, %w: !v, %z: !v) -> (!v, !v, !v) {
  %p = kiln.mul %x, %w : (!v, !v) -> !v
  %s = kiln.reduce_sum %p {axes = array<i64: 0>} : (!v) -> !s
  %g:3 = kiln.gradient %s wrt %x, %w, %z : (!s, !v, !v, !v) -> (!v, !v, !v)
  return %g#0, %g#1, %g#2 : !v, !v, !v
}

// -----

!s = tensor<f32, #kiln.enc<row_major, cpu>>

// A gradient of a gradient: the second differentiates the first one's
// expansion. At x = 3: d/dx x^3 = 3x^2 = 27, d/dx 3x^2 = 6x = 18, from the
// rules of mul (the FOLD run evaluates the expansion at compile time).
// CHECK-LABEL: func.func @second_order
// CHECK-NOT: kiln.gradient
// CHECK: return
// FOLD-LABEL: func.func @second_order
// FOLD-DAG: %[[D:.*]] = kiln.constant dense<2.700000e+01>
// FOLD-DAG: %[[DD:.*]] = kiln.constant dense<1.800000e+01>
// FOLD: return %[[D]], %[[DD]]
func.func @second_order() -> (!s, !s) {
  %x = kiln.constant dense<3.0> : tensor<f32> : !s
  %x2 = kiln.mul %x, %x : (!s, !s) -> !s
  %x3 = kiln.mul %x2, %x : (!s, !s) -> !s
  %d = kiln.gradient %x3 wrt %x : (!s, !s) -> !s
  %dd = kiln.gradient %d wrt %x : (!s, !s) -> !s
  return %d, %dd : !s, !s
}
