// RUN: not kiln-opt %s -split-input-file -kiln-expand-gradients 2>&1 | FileCheck %s

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// An op without a derivative on the way: named at its location.
// CHECK: error: kiln-grad: cannot differentiate 'kiln.relayout', which the gradient's value depends on through the values it is taken with respect to: it has no derivative rule
// CHECK: error: kiln-grad: 1 op without a derivative
func.func @no_rule(%x: !v) -> !v {
  %r = kiln.relayout %x {dim_order = array<i64: 0>} : (!v) -> !v
  %s = kiln.reduce_sum %r {axes = array<i64: 0>} : (!v) -> !s
  %g = kiln.gradient %s wrt %x : (!s, !v) -> !v
  return %g : !v
}

// -----

!d = tensor<?xf32, #kiln.enc<row_major, cpu, [s0]>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// Seeds and zeros take static shapes.
// CHECK: error: kiln-expand-gradients: gradients over dynamic dimensions are not built yet
func.func @dynamic(%x: !d) -> !d
    attributes {kiln.symbols = [{name = "n", min = 1, max = 4, opt = 2}]} {
  %y = kiln.mul %x, %x : (!d, !d) -> !d
  %s = kiln.reduce_sum %y {axes = array<i64: 0>} : (!d) -> !s
  %g = kiln.gradient %s wrt %x : (!s, !d) -> !d
  return %g : !d
}
