// RUN: kiln-opt %s -split-input-file -kiln-fuse-siblings=report=true -verify-diagnostics | FileCheck %s

!x = tensor<1x8x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x16xf32, #kiln.enc<row_major, cpu>>
!w8 = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!y = tensor<1x8x16xf32, #kiln.enc<row_major, cpu>>
!y8 = tensor<1x8x8xf32, #kiln.enc<row_major, cpu>>

// Q, K and V projections: one matmul over the weights joined at compile
// time (columns in program order), one slice per projection.
// CHECK-LABEL: func.func @qkv
// Each row of the joined weight: 16 columns of wq (1.0), 16 of wk (2.0), 8
// of wv (3.0), as little-endian f32.
// CHECK: %[[W:.*]] = kiln.weight "wq+wk+wv" = dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000004000000040000000400000004000000040000000400000004000000040000000400000004000000040000000400000004000000040000000400000004000004040000040400000404000004040000040400000404000004040000040400000803F{{.*}}> : tensor<16x40xf32>
// CHECK: %[[R:.*]]:3 = kiln.fusion horizontal(%arg0, %[[W]])
// CHECK-NEXT: ^bb0(%[[A:.*]]: {{.*}}, %[[B:.*]]: {{.*}}):
// CHECK-NEXT: %[[M:.*]] = kiln.matmul %[[A]], %[[B]] : {{.*}} -> tensor<1x8x40xf32
// CHECK-NEXT: kiln.slice %[[M]] {ends = array<i64: 1, 8, 16>, starts = array<i64: 0, 0, 0>
// CHECK-NEXT: kiln.slice %[[M]] {ends = array<i64: 1, 8, 32>, starts = array<i64: 0, 0, 16>
// CHECK-NEXT: kiln.slice %[[M]] {ends = array<i64: 1, 8, 40>, starts = array<i64: 0, 0, 32>
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @qkv(%x: !x) -> (!y, !y, !y8) {
  %wq = kiln.weight "wq" = dense<1.0> : tensor<16x16xf32> : !w
  %wk = kiln.weight "wk" = dense<2.0> : tensor<16x16xf32> : !w
  %wv = kiln.weight "wv" = dense<3.0> : tensor<16x8xf32> : !w8
  // expected-remark @+1 {{horizontal region: 3 sibling matmuls reading one input become one matmul with N=40: matmul, slice, slice, slice}}
  %q = kiln.matmul %x, %wq : (!x, !w) -> !y
  %k = kiln.matmul %x, %wk : (!x, !w) -> !y
  %v = kiln.matmul %x, %wv : (!x, !w8) -> !y8
  return %q, %k, %v : !y, !y, !y8
}

// -----

!x = tensor<8x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x16xf32, #kiln.enc<row_major, cpu>>
!b = tensor<16xf32, #kiln.enc<row_major, cpu>>
!y = tensor<8x16xf32, #kiln.enc<row_major, cpu>>

// With a bias on every sibling, the biases are joined too and added once.
// CHECK-LABEL: func.func @with_bias
// CHECK-DAG: %[[W:.*]] = kiln.weight "w1+w2" = {{.*}} : tensor<16x32xf32>
// CHECK-DAG: %[[B:.*]] = kiln.weight "b1+b2" = {{.*}} : tensor<32xf32>
// CHECK: kiln.fusion horizontal(%arg0, %[[W]], %[[B]])
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.slice
// CHECK-NEXT: kiln.slice
func.func @with_bias(%x: !x) -> (!y, !y) {
  %w1 = kiln.weight "w1" = dense<1.0> : tensor<16x16xf32> : !w
  %w2 = kiln.weight "w2" = dense<2.0> : tensor<16x16xf32> : !w
  %b1 = kiln.weight "b1" = dense<0.5> : tensor<16xf32> : !b
  %b2 = kiln.weight "b2" = dense<0.25> : tensor<16xf32> : !b
  // expected-remark @+1 {{horizontal region: 2 sibling matmuls reading one input become one matmul with N=32 and its bias: matmul, add, slice, slice}}
  %0 = kiln.matmul %x, %w1 : (!x, !w) -> !y
  %1 = kiln.add %0, %b1 : (!y, !b) -> !y
  %2 = kiln.matmul %x, %w2 : (!x, !w) -> !y
  %3 = kiln.add %b2, %2 : (!b, !y) -> !y
  return %1, %3 : !y, !y
}

// -----

!x = tensor<8x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x16xf32, #kiln.enc<row_major, cpu>>
!y = tensor<8x16xf32, #kiln.enc<row_major, cpu>>

// A matmul whose right operand is an activation, not a weight, has no
// sibling group; a lone matmul has none either.
// CHECK-LABEL: func.func @not_siblings
// CHECK-NOT: kiln.fusion
func.func @not_siblings(%x: !x, %other: !w) -> (!y, !y) {
  %w1 = kiln.weight "w1" = dense<1.0> : tensor<16x16xf32> : !w
  %0 = kiln.matmul %x, %w1 : (!x, !w) -> !y
  // expected-remark @+1 {{horizontal fusion: 'matmul' has no sibling group: its right operand is not a 2-D row-major weight}}
  %1 = kiln.matmul %x, %other : (!x, !w) -> !y
  return %0, %1 : !y, !y
}

// -----

!x = tensor<8x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x16xf32, #kiln.enc<row_major, cpu>>
!b = tensor<16xf32, #kiln.enc<row_major, cpu>>
!y = tensor<8x16xf32, #kiln.enc<row_major, cpu>>

// Only one sibling has a bias: the weights are joined, the bias add stays
// outside on its slice.
// CHECK-LABEL: func.func @partial_bias
// CHECK: %[[R:.*]]:2 = kiln.fusion horizontal
// CHECK-NOT: kiln.add
// CHECK: kiln.yield
// CHECK: kiln.add %[[R]]#0
func.func @partial_bias(%x: !x) -> (!y, !y) {
  %w1 = kiln.weight "w1" = dense<1.0> : tensor<16x16xf32> : !w
  %w2 = kiln.weight "w2" = dense<2.0> : tensor<16x16xf32> : !w
  %b1 = kiln.weight "b1" = dense<0.5> : tensor<16xf32> : !b
  // expected-remark @+1 {{horizontal region: 2 sibling matmuls reading one input become one matmul with N=32: matmul, slice, slice}}
  %0 = kiln.matmul %x, %w1 : (!x, !w) -> !y
  %1 = kiln.add %0, %b1 : (!y, !b) -> !y
  %2 = kiln.matmul %x, %w2 : (!x, !w) -> !y
  return %1, %2 : !y, !y
}

// -----

!x = tensor<1x8x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x16xf32, #kiln.enc<row_major, cpu>>
!y = tensor<1x8x16xf32, #kiln.enc<row_major, cpu>>

// Must not fire: the same product again (kiln-remat's recomputation for
// the backward pass, after other ops) stays apart and in its place; the
// true siblings still join.
// CHECK-LABEL: func.func @recomputed_product
// CHECK: kiln.fusion horizontal
// CHECK: kiln.tanh
// CHECK-NEXT: kiln.matmul %arg0, %wq
// CHECK-NOT: kiln.fusion
func.func @recomputed_product(%x: !x) -> (!y, !y, !y) {
  %wq = kiln.weight "wq" = dense<1.0> : tensor<16x16xf32> : !w
  %wk = kiln.weight "wk" = dense<2.0> : tensor<16x16xf32> : !w
  // expected-remark @+1 {{horizontal region: 2 sibling matmuls reading one input become one matmul with N=32: matmul, slice, slice}}
  %q = kiln.matmul %x, %wq : (!x, !w) -> !y
  %k = kiln.matmul %x, %wk : (!x, !w) -> !y
  %t = kiln.tanh %k : (!y) -> !y
  // expected-remark @+1 {{horizontal fusion: 'matmul' computes the matmul at}}
  %q2 = kiln.matmul %x, %wq : (!x, !w) -> !y
  %s = kiln.add %t, %q2 : (!y, !y) -> !y
  return %q, %s, %t : !y, !y, !y
}
