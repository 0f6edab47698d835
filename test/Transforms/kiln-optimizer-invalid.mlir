// RUN: not kiln-opt %s -split-input-file -kiln-optimizer 2>&1 | FileCheck %s

!s = tensor<f32, #kiln.enc<row_major, cpu>>

// Outputs after the loss must be weights' gradients, as kiln-grad names them.
// CHECK: error: kiln-optimizer: output #1 is not a weight's gradient (run kiln-grad first)
func.func @not_a_gradient(%x: !s {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !s {kiln.name = "y"}) {
  return %x, %x : !s, !s
}

// -----

!s = tensor<f32, #kiln.enc<row_major, cpu>>

// CHECK: error: kiln-optimizer: output #1 is not a weight's gradient (run kiln-grad first)
func.func @no_such_weight(%x: !s {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !s {kiln.name = "grad.w"}) {
  return %x, %x : !s, !s
}

// -----

!h = tensor<4xf16, #kiln.enc<row_major, cpu>>
!s = tensor<f16, #kiln.enc<row_major, cpu>>

// Training steps update f32 weights (an f16 epsilon of 1e-8 is 0).
// CHECK: error: kiln-optimizer: weight 'w' is 'tensor<4xf16, #kiln.enc<row_major, cpu>>'; training steps update f32 weights so far
func.func @half_weight(%x: !h {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !h {kiln.name = "grad.w"}) {
  %w = kiln.weight "w" = dense<1.0> : tensor<4xf16> : !h
  %y = kiln.mul %x, %w : (!h, !h) -> !h
  %loss = kiln.reduce_sum %y {axes = array<i64: 0>} : (!h) -> !s
  return %loss, %x : !s, !h
}

// -----

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// A state may not take an input's name.
// CHECK: error: kiln-optimizer: the state 'w' would share its name with an input or another state
func.func @name_taken(%x: !v {kiln.name = "w"}) -> (!s {kiln.name = "loss"}, !v {kiln.name = "grad.w"}) {
  %w = kiln.weight "w" = dense<1.0> : tensor<4xf32> : !v
  %y = kiln.mul %x, %w : (!v, !v) -> !v
  %loss = kiln.reduce_sum %y {axes = array<i64: 0>} : (!v) -> !s
  return %loss, %x : !s, !v
}

// -----

!s = tensor<f32, #kiln.enc<row_major, cpu>>

// CHECK: error: kiln-optimizer: no weight to train (--trainable matches none)
func.func @nothing_to_train(%x: !s {kiln.name = "x"}) -> (!s {kiln.name = "loss"}) {
  return %x : !s
}
