// Layouts, placement, fusion, batch-norm folding and implementation
// selection take static shapes only so far: a function with symbolic sizes
// passes through each of them unchanged (kilnc runs only the default graph
// pipeline on such models). The same ops with static shapes do fuse
// (kiln-fuse-loops.mlir, kiln-fuse-epilogues.mlir, ...).
// RUN: kiln-opt %s --kiln-fusion-pipeline | FileCheck %s
// RUN: kiln-opt %s --kiln-assign-layouts --kiln-place --kiln-fold-batch-norm --kiln-cpu-channels-last | FileCheck %s
// RUN: kiln-opt %s --kiln-graph-pipeline --kiln-fusion-pipeline | FileCheck %s --check-prefix=GRAPH

!x = tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0]>>
!img = tensor<?x4x6x6xf32, #kiln.enc<row_major, cpu, [s0]>>

// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: kiln.fusion
// CHECK-NOT: kiln.transfer
// CHECK-NOT: kiln.relayout
// CHECK: kiln.matmul
// CHECK: kiln.add
// CHECK: kiln.relu
// CHECK: kiln.conv2d
// CHECK: kiln.batch_norm
// CHECK: kiln.relu
// CHECK-NOT: kiln.fusion
// GRAPH-LABEL: func.func @dynamic
// GRAPH-NOT: kiln.fusion
func.func @dynamic(%x: !x, %img: !img) -> (!x, !img)
    attributes {kiln.symbols = [{name = "batch", min = 1, max = 8, opt = 4}]} {
  %w = kiln.weight "w" = dense<0.5> : tensor<8x8xf32> : tensor<8x8xf32, #kiln.enc<row_major, cpu>>
  %b = kiln.weight "b" = dense<0.25> : tensor<8xf32> : tensor<8xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.matmul %x, %w : (!x, tensor<8x8xf32, #kiln.enc<row_major, cpu>>) -> !x
  %1 = kiln.add %0, %b : (!x, tensor<8xf32, #kiln.enc<row_major, cpu>>) -> !x
  %2 = kiln.relu %1 : (!x) -> !x
  %f = kiln.weight "f" = dense<0.5> : tensor<4x4x3x3xf32> : tensor<4x4x3x3xf32, #kiln.enc<row_major, cpu>>
  %c = kiln.weight "c" = dense<1.0> : tensor<4xf32> : tensor<4xf32, #kiln.enc<row_major, cpu>>
  %3 = kiln.conv2d %img, %f {padding = array<i64: 1, 1, 1, 1>} : (!img, tensor<4x4x3x3xf32, #kiln.enc<row_major, cpu>>) -> !img
  %4 = kiln.batch_norm %3, %c, %c, %c, %c {epsilon = 1.0e-5 : f64} : (!img, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>) -> !img
  %5 = kiln.relu %4 : (!img) -> !img
  return %2, %5 : !x, !img
}
