// RUN: kiln-opt %s -cse | FileCheck %s

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>
!m = tensor<2x2xf32, #kiln.enc<row_major, cpu>>

// Identical pure ops on identical operands merge.
// CHECK-LABEL: func.func @merges_duplicates
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<1.000000e+00>
// CHECK-NEXT: %[[A:.*]] = kiln.add %arg0, %[[C]]
// CHECK-NEXT: return %[[A]], %[[A]], %[[C]], %[[C]]
func.func @merges_duplicates(%x: !v) -> (!v, !v, !v, !v) {
  %c0 = kiln.constant dense<1.0> : tensor<4xf32> : !v
  %c1 = kiln.constant dense<1.0> : tensor<4xf32> : !v
  %0 = kiln.add %x, %c0 : (!v, !v) -> !v
  %1 = kiln.add %x, %c1 : (!v, !v) -> !v
  return %0, %1, %c0, %c1 : !v, !v, !v, !v
}

// Different attributes, different constants or different operands: kept.
// CHECK-LABEL: func.func @keeps_distinct
// CHECK: kiln.constant dense<1.000000e+00>
// CHECK: kiln.constant dense<2.000000e+00>
// CHECK: kiln.matmul %arg0, %arg0 :
// CHECK: kiln.matmul %arg0, %arg0 {transpose_b = true}
// CHECK: kiln.weight "a"
// CHECK: kiln.weight "b"
func.func @keeps_distinct(%x: !m) -> (!v, !v, !m, !m, !v, !v) {
  %c0 = kiln.constant dense<1.0> : tensor<4xf32> : !v
  %c1 = kiln.constant dense<2.0> : tensor<4xf32> : !v
  %0 = kiln.matmul %x, %x : (!m, !m) -> !m
  %1 = kiln.matmul %x, %x {transpose_b = true} : (!m, !m) -> !m
  // Two weights with the same value but different names stay apart.
  %w0 = kiln.weight "a" = dense<1.0> : tensor<4xf32> : !v
  %w1 = kiln.weight "b" = dense<1.0> : tensor<4xf32> : !v
  return %c0, %c1, %0, %1, %w0, %w1 : !v, !v, !m, !m, !v, !v
}
