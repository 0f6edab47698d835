// RUN: kiln-opt %s -kiln-dce | FileCheck %s

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>

// A dead chain goes in one pass, with the weights that only it used; values
// that reach the return stay, and so do unused inputs (the signature).
// CHECK-LABEL: func.func @dead_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32, #kiln.enc<row_major, cpu>>, %[[UNUSED:.*]]: tensor
// CHECK-NEXT: %[[W:.*]] = kiln.weight "live"
// CHECK-NEXT: %[[A:.*]] = kiln.add %[[X]], %[[W]]
// CHECK-NEXT: return %[[A]]
func.func @dead_chain(%x: !v, %unused: !v) -> !v {
  %live = kiln.weight "live" = dense<1.0> : tensor<4xf32> : !v
  %dead = kiln.weight "dead" = dense<2.0> : tensor<4xf32> : !v
  %c = kiln.constant dense<3.0> : tensor<4xf32> : !v
  %0 = kiln.add %x, %live : (!v, !v) -> !v
  %1 = kiln.mul %x, %dead : (!v, !v) -> !v
  %2 = kiln.exp %1 : (!v) -> !v
  %3 = kiln.sub %2, %c : (!v, !v) -> !v
  return %0 : !v
}

// Nothing is dead: nothing changes.
// CHECK-LABEL: func.func @all_live
// CHECK: kiln.weight "w"
// CHECK: kiln.mul
// CHECK: kiln.relu
// CHECK: return
func.func @all_live(%x: !v) -> (!v, !v) {
  %w = kiln.weight "w" = dense<1.0> : tensor<4xf32> : !v
  %0 = kiln.mul %x, %w : (!v, !v) -> !v
  %1 = kiln.relu %0 : (!v) -> !v
  return %0, %1 : !v, !v
}
