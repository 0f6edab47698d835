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

// Every op without a derivative the loss depends on through a trainable
// weight, each at its location, at once; a product over a reduction
// (reduce_prod) has none yet.
// CHECK: error: kiln-grad: cannot differentiate 'kiln.reduce_prod', which the loss 'loss' depends on through trainable weights: it has no derivative rule
// CHECK: error: kiln-grad: cannot differentiate 'kiln.reduce_prod', which the loss 'loss' depends on through trainable weights: it has no derivative rule
// CHECK: error: kiln-grad: 2 ops without a derivative
func.func @no_rule(%x: !v {kiln.name = "x"}) -> (!s {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<1.0> : tensor<2x4xf32> : !v
  %y = kiln.mul %x, %w : (!v, !v) -> !v
  %p = kiln.reduce_prod %y {axes = array<i64: 1>} : (!v) -> tensor<2xf32, #kiln.enc<row_major, cpu>>
  %q = kiln.reduce_prod %p {axes = array<i64: 0>} : (tensor<2xf32, #kiln.enc<row_major, cpu>>) -> !s
  return %q : !s
}

// -----

!s = tensor<f32, #kiln.enc<row_major, cpu>>

// CHECK: error: kiln-grad: the model has two outputs named 'loss'
func.func @two_losses(%x: !s {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !s {kiln.name = "loss"}) {
  return %x, %x : !s, !s
}

// -----

!v = tensor<2x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// A strided slice has no derivative yet: refused before anything is built.
// CHECK: error: kiln-grad: cannot differentiate 'kiln.slice', which the loss 'loss' depends on through trainable weights: slices with steps other than 1 have no derivative so far
func.func @strided_slice(%x: !v {kiln.name = "x"}) -> (!s {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<1.0> : tensor<2x4xf32> : !v
  %y = kiln.mul %x, %w : (!v, !v) -> !v
  %z = kiln.slice %y {starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 2>} : (!v) -> tensor<2x2xf32, #kiln.enc<row_major, cpu>>
  %loss = kiln.reduce_sum %z {axes = array<i64: 0, 1>} : (tensor<2x2xf32, #kiln.enc<row_major, cpu>>) -> !s
  return %loss : !s
}
