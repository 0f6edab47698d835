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
