// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file --mlir-print-op-generic | kiln-opt -split-input-file | FileCheck %s

// A length that follows computed data (NonZero of a computed tensor): a
// symbol listed `bound`, which the one kiln.take_prefix naming it binds
// from its count (an i64 scalar a step computes) when the model runs.
// The result's dimension at `axis` is that symbol.

!v = tensor<30xi64, #kiln.enc<row_major, cpu>>
!n = tensor<i64, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @positions_of_nonzeros
// CHECK-SAME: {bound, max = 30 : i64, min = 0 : i64, name = "y.dim1", opt = 30 : i64}
func.func @positions_of_nonzeros(%order: !v, %count: !n) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
    attributes {kiln.symbols = [{name = "y.dim1", min = 0, max = 30, opt = 30, bound}]} {
  // CHECK: kiln.take_prefix %{{.*}}, %{{.*}} {axis = 0 : i64, length = #map} {{.*}} -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  %0 = kiln.take_prefix %order, %count {axis = 0 : i64, length = affine_map<()[s0] -> (s0)>} : (!v, !n) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  return %0 : tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
}

// -----

// Rows kept along axis 1 of a matrix, the other dimensions unchanged; the
// length then sizes what follows like any symbol.
!x = tensor<4x5xf32, #kiln.enc<row_major, cpu>>
!n = tensor<i64, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @prefix_along_axis_1
func.func @prefix_along_axis_1(%x: !x, %count: !n) -> tensor<4x?xf32, #kiln.enc<row_major, cpu, [s1]>>
    attributes {kiln.symbols = [{name = "batch", min = 1, max = 8, opt = 2},
                                {name = "kept", min = 0, max = 5, opt = 5, bound}]} {
  // CHECK: kiln.take_prefix {{.*}} -> tensor<4x?xf32, #kiln.enc<row_major, cpu, [s1]>>
  %0 = kiln.take_prefix %x, %count {axis = 1 : i64, length = affine_map<()[s0, s1] -> (s1)>} : (!x, !n) -> tensor<4x?xf32, #kiln.enc<row_major, cpu, [s1]>>
  // CHECK: kiln.exp {{.*}} -> tensor<4x?xf32, #kiln.enc<row_major, cpu, [s1]>>
  %1 = kiln.exp %0 : (tensor<4x?xf32, #kiln.enc<row_major, cpu, [s1]>>) -> tensor<4x?xf32, #kiln.enc<row_major, cpu, [s1]>>
  return %1 : tensor<4x?xf32, #kiln.enc<row_major, cpu, [s1]>>
}

// -----

// Non-maximum suppression at its upper bound: a row per batch, class and
// box, those kept first (then rows of -1), cut to their count.
!b = tensor<2x16x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x3x16xf32, #kiln.enc<row_major, cpu>>
!k = tensor<i64, #kiln.enc<row_major, cpu>>
!f = tensor<f32, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @suppression
func.func @suppression(%boxes: !b, %scores: !s, %max: !k, %iou: !f, %min: !f, %count: !k) -> tensor<?x3xi64, #kiln.enc<row_major, cpu, [s0]>>
    attributes {kiln.symbols = [{name = "kept", min = 0, max = 96, opt = 96, bound}]} {
  // CHECK: kiln.non_max_suppression {{.*}} {center_point_box = 1 : i64} {{.*}} -> tensor<96x3xi64, #kiln.enc<row_major, cpu>>
  %rows = kiln.non_max_suppression %boxes, %scores, %max, %iou, %min {center_point_box = 1 : i64} : (!b, !s, !k, !f, !f) -> tensor<96x3xi64, #kiln.enc<row_major, cpu>>
  %0 = kiln.take_prefix %rows, %count {axis = 0 : i64, length = affine_map<()[s0] -> (s0)>} : (tensor<96x3xi64, #kiln.enc<row_major, cpu>>, !k) -> tensor<?x3xi64, #kiln.enc<row_major, cpu, [s0]>>
  return %0 : tensor<?x3xi64, #kiln.enc<row_major, cpu, [s0]>>
}
