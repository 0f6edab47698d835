// RUN: not kiln-opt %s -split-input-file -kiln-grad=loss=loss 2>&1 | FileCheck %s

// What kiln-grad refuses, each with an error naming it.

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>

// CHECK: error: kiln-grad: the model has no output named 'loss'
func.func @no_such_output(%x: !v {kiln.name = "x"}) -> (!v {kiln.name = "y"}) {
  return %x : !v
}

// -----

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>

// CHECK: error: kiln-grad: the loss 'loss' must be a float scalar, got 'tensor<4xf32
func.func @not_a_scalar(%x: !v {kiln.name = "x"}) -> (!v {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<1.0> : tensor<4xf32> : !v
  %y = kiln.mul %x, %w : (!v, !v) -> !v
  return %y : !v
}

// -----

!v = tensor<2x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

!n = tensor<2x4xf32, #kiln.enc<perm[1, 0], cpu>>

// Every op without a derivative the loss depends on through a trainable
// weight, each at its location, at once. Every op kiln-grad meets in
// kilnc has a rule; a relayout (which the layout passes make, after it)
// has none.
// CHECK: error: kiln-grad: cannot differentiate 'kiln.relayout', which the loss 'loss' depends on through trainable weights: it has no derivative rule
// CHECK: error: kiln-grad: cannot differentiate 'kiln.relayout', which the loss 'loss' depends on through trainable weights: it has no derivative rule
// CHECK: error: kiln-grad: 2 ops without a derivative
func.func @no_rule(%x: !v {kiln.name = "x"}) -> (!s {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<1.0> : tensor<2x4xf32> : !v
  %y = kiln.mul %x, %w : (!v, !v) -> !v
  %p = kiln.relayout %y {dim_order = array<i64: 1, 0>} : (!v) -> !n
  %q = kiln.relayout %p : (!n) -> !v
  %r = kiln.reduce_sum %q {axes = array<i64: 0, 1>} : (!v) -> !s
  return %r : !s
}

// -----

!s = tensor<f32, #kiln.enc<row_major, cpu>>

// CHECK: error: kiln-grad: the model has two outputs named 'loss'
func.func @two_losses(%x: !s {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !s {kiln.name = "loss"}) {
  return %x, %x : !s, !s
}

// -----

!v = tensor<2x4xf32, #kiln.enc<row_major, cpu>>
!i = tensor<1x4xi64, #kiln.enc<row_major, cpu>>
!u = tensor<1x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// Scatters that assign or add have derivatives; one that multiplies not.
// CHECK: error: kiln-grad: cannot differentiate 'kiln.scatter_elements', which the loss 'loss' depends on through trainable weights: scatters that multiply have no derivative so far
func.func @scatter_mul(%x: !v {kiln.name = "x"}, %idx: !i {kiln.name = "idx"}) -> (!s {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<2.0> : tensor<1x4xf32> : !u
  %y = kiln.scatter_elements %x, %idx, %w {axis = 0 : i64, reduction = "mul"} : (!v, !i, !u) -> !v
  %loss = kiln.reduce_sum %y {axes = array<i64: 0, 1>} : (!v) -> !s
  return %loss : !s
}
