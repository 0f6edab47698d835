// RUN: kiln-opt %s -split-input-file -kiln-fuse-loops=report=true -verify-diagnostics | FileCheck %s

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!v = tensor<8xf32, #kiln.enc<row_major, cpu>>

// A chain with a broadcast bias becomes one loop; the splat constant is
// cloned into the region rather than passed in.
// CHECK-LABEL: func.func @chain
// CHECK: %[[R:.*]] = kiln.fusion loop(%arg0, %arg1)
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32, #kiln.enc<row_major, cpu>>, %[[B:.*]]: tensor<8xf32, #kiln.enc<row_major, cpu>>):
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[X]], %[[B]]
// CHECK-NEXT: %[[Y:.*]] = kiln.relu %[[S]]
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<2.000000e+00>
// CHECK-NEXT: %[[Z:.*]] = kiln.mul %[[Y]], %[[C]]
// CHECK-NEXT: kiln.yield %[[Z]]
// CHECK: return %[[R]]
func.func @chain(%x: !t, %b: !v) -> !t {
  %two = kiln.constant dense<2.0> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %0 = kiln.add %x, %b : (!t, !v) -> !t
  %1 = kiln.relu %0 : (!t) -> !t
  // expected-remark @+1 {{loop region: add, relu, mul}}
  %2 = kiln.mul %1, %two : (!t, tensor<f32, #kiln.enc<row_major, cpu>>) -> !t
  return %2 : !t
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>

// Two branches that meet form one region (a tree), with both inputs.
// CHECK-LABEL: func.func @tree
// CHECK: kiln.fusion loop(%arg0, %arg1)
// CHECK-COUNT-4: kiln.{{neg|exp|tanh|sub}}
// CHECK-NOT: kiln.fusion
func.func @tree(%x: !t, %y: !t) -> !t {
  %0 = kiln.neg %x : (!t) -> !t
  %1 = kiln.exp %y : (!t) -> !t
  %2 = kiln.tanh %1 : (!t) -> !t
  // expected-remark @+1 {{loop region: neg, exp, tanh, sub}}
  %3 = kiln.sub %0, %2 : (!t, !t) -> !t
  return %3 : !t
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>

// An expensive producer with users in two regions is computed once, not
// duplicated: exp stays a kernel of its own.
// CHECK-LABEL: func.func @expensive_shared
// CHECK: %[[E:.*]] = kiln.exp %arg0
// CHECK: kiln.fusion loop(%[[E]])
// CHECK: kiln.fusion loop(%[[E]])
func.func @expensive_shared(%x: !t) -> (!t, !t) {
  // expected-remark @+3 {{loop fusion: 'exp' not fused into the region of 'relu': it has users outside the region and is too expensive to compute twice}}
  // expected-remark @+2 {{loop fusion: 'exp' not fused into the region of 'abs': it has users outside the region and is too expensive to compute twice}}
  // expected-remark @+1 {{loop fusion: 'exp' stays a kernel of its own: no elementwise producer to fuse}}
  %e = kiln.exp %x : (!t) -> !t
  %0 = kiln.neg %e : (!t) -> !t
  // expected-remark @+1 {{loop region: neg, abs}}
  %1 = kiln.abs %0 : (!t) -> !t
  %2 = kiln.sqrt %e : (!t) -> !t
  // expected-remark @+1 {{loop region: sqrt, relu}}
  %3 = kiln.relu %2 : (!t) -> !t
  return %1, %3 : !t, !t
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!w = tensor<8x8xf32, #kiln.enc<row_major, cpu>>

// A cheap producer that a matmul also reads is duplicated into the region;
// the original stays for the matmul.
// CHECK-LABEL: func.func @cheap_duplicated
// CHECK: %[[N:.*]] = kiln.neg %arg0
// CHECK: kiln.matmul %[[N]], %arg1
// CHECK: kiln.fusion loop(%arg0)
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32, #kiln.enc<row_major, cpu>>):
// CHECK-NEXT: %[[N2:.*]] = kiln.neg %[[A]]
// CHECK-NEXT: kiln.relu %[[N2]]
func.func @cheap_duplicated(%x: !t, %w: !w) -> (!t, !t) {
  // expected-remark @+1 {{loop fusion: 'neg' stays a kernel of its own}}
  %n = kiln.neg %x : (!t) -> !t
  %m = kiln.matmul %n, %w : (!t, !w) -> !t
  // expected-remark @+1 {{loop region: neg, relu}}
  %r = kiln.relu %n : (!t) -> !t
  return %m, %r : !t, !t
}

// -----

!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!g = tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>

// Never across a device boundary: the transfer is not a candidate, and the
// ops on either side stay apart.
// CHECK-LABEL: func.func @device_boundary
// CHECK-NOT: kiln.fusion
func.func @device_boundary(%x: !c) -> !g {
  // expected-remark @+1 {{loop fusion: 'relu' stays a kernel of its own}}
  %0 = kiln.relu %x : (!c) -> !c
  %1 = kiln.transfer %0 {to = "cuda:0"} : (!c) -> !g
  // expected-remark @+1 {{loop fusion: 'neg' stays a kernel of its own}}
  %2 = kiln.neg %1 : (!g) -> !g
  return %2 : !g
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!f = tensor<32xf32, #kiln.enc<row_major, cpu>>
!p = tensor<4x8xf32, #kiln.enc<perm[1, 0], cpu>>

// A row-major reshape moves no data and joins; a relayout moves data and
// does not.
// CHECK-LABEL: func.func @reshape_and_relayout
// CHECK: kiln.fusion loop(%arg0)
// CHECK: kiln.relu
// CHECK: kiln.reshape
// CHECK: kiln.neg
// CHECK: kiln.relayout
func.func @reshape_and_relayout(%x: !t) -> (!f, !p) {
  %0 = kiln.relu %x : (!t) -> !t
  %1 = kiln.reshape %0 {shape = array<i64: 32>} : (!t) -> !f
  // expected-remark @+1 {{loop region: relu, reshape, neg}}
  %2 = kiln.neg %1 : (!f) -> !f
  %3 = kiln.relayout %x {dim_order = array<i64: 1, 0>} : (!t) -> !p
  // expected-remark @+1 {{loop fusion: 'abs' stays a kernel of its own}}
  %4 = kiln.abs %3 : (!p) -> !p
  return %2, %4 : !f, !p
}
