// RUN: not kiln-opt %s -split-input-file -kiln-remat="loss=loss budget=0.5" 2>&1 | FileCheck %s
// RUN: not kiln-opt %s -split-input-file -kiln-remat="loss=loss budget=1.5" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not kiln-opt %s -split-input-file -kiln-remat="loss=loss budget=-0.5" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not kiln-opt %s -split-input-file -kiln-remat="loss=loss budget=nan" 2>&1 | FileCheck %s --check-prefix=NAN

!s = tensor<f32, #kiln.enc<row_major, cpu>>

// The loss names an output.
// CHECK: error: kiln-remat: the function has no output named 'loss'
// BUDGET: error: kiln-remat: the memory budget must be between 0 and 1, got 1.5
// NEGATIVE: error: kiln-remat: the memory budget must be between 0 and 1, got -0.5
// NAN: error: kiln-remat: the memory budget must be between 0 and 1, got nan
func.func @no_loss(%x: !s {kiln.name = "x"}) -> (!s {kiln.name = "y"}) {
  return %x : !s
}

// -----

!d = tensor<?x4xf32, #kiln.enc<row_major, cpu, [s0]>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// Bytes decide; a dynamic size has none to plan by.
// CHECK: error: kiln-remat: sizes must be static to plan memory by them
func.func @dynamic(%x: !d {kiln.name = "x"}) -> (!s {kiln.name = "loss"})
    attributes {kiln.symbols = [{name = "b", min = 1, max = 4, opt = 2}]} {
  %t = kiln.tanh %x : (!d) -> !d
  %loss = kiln.reduce_sum %t {axes = array<i64: 0, 1>} : (!d) -> !s
  return %loss : !s
}
