// RUN: kiln-opt %s -split-input-file -kiln-assign-layouts | FileCheck %s

// Tensor Core convolutions (f16/bf16, ungrouped, channels multiples of 8,
// a filter weight of their own) run channels last: one conversion in, the
// filters laid out KRSC (retyped: their data is logical), the fused
// epilogue (the conv's bias, a [1, K, 1, 1] bias add, ReLU) channels last,
// the second convolution fed channels last directly, one conversion out.
!x = tensor<2x16x9x9xf16, #kiln.enc<row_major, cpu>>
!w1 = tensor<16x16x3x3xf16, #kiln.enc<row_major, cpu>>
!b1 = tensor<16xf16, #kiln.enc<row_major, cpu>>
!w2 = tensor<32x16x3x3xf16, #kiln.enc<row_major, cpu>>
!b2 = tensor<1x32x1x1xf16, #kiln.enc<row_major, cpu>>
!y = tensor<2x32x9x9xf16, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[IN:.*]] = kiln.relayout %arg0 {dim_order = array<i64: 0, 2, 3, 1>} : (tensor<2x16x9x9xf16, #kiln.enc<row_major, cpu>>) -> tensor<2x16x9x9xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[W1:.*]] = kiln.weight "w1" {{.*}} : tensor<16x16x3x3xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[B1:.*]] = kiln.weight "b1" {{.*}} : tensor<16xf16, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: %[[W2:.*]] = kiln.weight "w2" {{.*}} : tensor<32x16x3x3xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[B2:.*]] = kiln.weight "b2" {{.*}} : tensor<1x32x1x1xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[C1:.*]] = kiln.conv2d %[[IN]], %[[W1]], %[[B1]] {{.*}} -> tensor<2x16x9x9xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[R1:.*]] = kiln.relu %[[C1]] {{.*}} -> tensor<2x16x9x9xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[C2:.*]] = kiln.conv2d %[[R1]], %[[W2]] {{.*}} -> tensor<2x32x9x9xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[A2:.*]] = kiln.add %[[C2]], %[[B2]] {{.*}} -> tensor<2x32x9x9xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[R2:.*]] = kiln.relu %[[A2]] {{.*}} -> tensor<2x32x9x9xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[OUT:.*]] = kiln.relayout %[[R2]] : (tensor<2x32x9x9xf16, #kiln.enc<nhwc, cpu>>) -> tensor<2x32x9x9xf16, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: return %[[OUT]]
func.func @chain(%x: !x) -> !y {
  %w1 = kiln.weight "w1" = dense<0.5> : tensor<16x16x3x3xf16> : !w1
  %b1 = kiln.weight "b1" = dense<0.25> : tensor<16xf16> : !b1
  %w2 = kiln.weight "w2" = dense<0.5> : tensor<32x16x3x3xf16> : !w2
  %b2 = kiln.weight "b2" = dense<[[[[0.0]], [[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[0.0]], [[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[0.0]], [[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[0.0]], [[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[0.0]], [[1.0]], [[2.0]], [[3.0]]]]> : tensor<1x32x1x1xf16> : !b2
  %c1 = kiln.conv2d %x, %w1, %b1 {padding = array<i64: 1, 1, 1, 1>} : (!x, !w1, !b1) -> !x
  %r1 = kiln.relu %c1 : (!x) -> !x
  %c2 = kiln.conv2d %r1, %w2 {padding = array<i64: 1, 1, 1, 1>} : (!x, !w2) -> !y
  %a2 = kiln.add %c2, %b2 : (!y, !b2) -> !y
  %r2 = kiln.relu %a2 : (!y) -> !y
  return %r2 : !y
}

// -----

// The channels-last chain ends before an op cuDNN does not fuse (here a
// scale after the bias add): the conversion back comes first.
!x = tensor<1x8x5x5xbf16, #kiln.enc<row_major, cpu>>
!w = tensor<8x8x1x1xbf16, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @chain_ends
// CHECK: %[[C:.*]] = kiln.conv2d {{.*}} -> tensor<1x8x5x5xbf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[BACK:.*]] = kiln.relayout %[[C]] : (tensor<1x8x5x5xbf16, #kiln.enc<nhwc, cpu>>) -> tensor<1x8x5x5xbf16, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: kiln.mul %[[BACK]], {{.*}} -> tensor<1x8x5x5xbf16, #kiln.enc<row_major, cpu>>
func.func @chain_ends(%x: !x) -> !x {
  %w = kiln.weight "w" = dense<0.5> : tensor<8x8x1x1xbf16> : !w
  %s = kiln.constant dense<2.0> : tensor<bf16> : tensor<bf16, #kiln.enc<row_major, cpu>>
  %c = kiln.conv2d %x, %w : (!x, !w) -> !x
  %m = kiln.mul %c, %s : (!x, tensor<bf16, #kiln.enc<row_major, cpu>>) -> !x
  return %m : !x
}

// -----

// Must not fire: f32 (CUDA cores, kiln's own kernel, NCHW), 4 input channels
// (not a whole 16-byte group), two groups, and a filter two convolutions
// share (its layout is not this convolution's alone).
!x32 = tensor<1x8x5x5xf32, #kiln.enc<row_major, cpu>>
!w32 = tensor<8x8x1x1xf32, #kiln.enc<row_major, cpu>>
!x4 = tensor<1x4x5x5xf16, #kiln.enc<row_major, cpu>>
!w4 = tensor<8x4x1x1xf16, #kiln.enc<row_major, cpu>>
!y4 = tensor<1x8x5x5xf16, #kiln.enc<row_major, cpu>>
!wg = tensor<8x4x1x1xf16, #kiln.enc<row_major, cpu>>
!w8 = tensor<8x8x1x1xf16, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @not_tensor_core
// CHECK-NOT: nhwc
// CHECK-NOT: kiln.relayout
// CHECK: return
func.func @not_tensor_core(%a: !x32, %b: !x4, %c: !y4) -> (!x32, !y4, !y4, !y4, !y4) {
  %w32 = kiln.weight "w32" = dense<0.5> : tensor<8x8x1x1xf32> : !w32
  %w4 = kiln.weight "w4" = dense<0.5> : tensor<8x4x1x1xf16> : !w4
  %wg = kiln.weight "wg" = dense<0.5> : tensor<8x4x1x1xf16> : !wg
  %w8 = kiln.weight "w8" = dense<0.5> : tensor<8x8x1x1xf16> : !w8
  %f32 = kiln.conv2d %a, %w32 : (!x32, !w32) -> !x32
  %narrow = kiln.conv2d %b, %w4 : (!x4, !w4) -> !y4
  %grouped = kiln.conv2d %c, %wg {groups = 2 : i64} : (!y4, !wg) -> !y4
  %shared1 = kiln.conv2d %c, %w8 : (!y4, !w8) -> !y4
  %shared2 = kiln.conv2d %c, %w8 : (!y4, !w8) -> !y4
  return %f32, %narrow, %grouped, %shared1, %shared2 : !x32, !y4, !y4, !y4, !y4
}

// -----

// Two convolutions reading one value share its conversion; an input
// declared channels last reaches them with no round trip.
!xn = tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
!x = tensor<1x8x5x5xf16, #kiln.enc<row_major, cpu>>
!w = tensor<8x8x1x1xf16, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @shared_input
// CHECK-SAME: (%[[ARG:.*]]: tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>, %[[PLAIN:.*]]: tensor<1x8x5x5xf16, #kiln.enc<row_major, cpu>>)
// CHECK: %[[IN:.*]] = kiln.relayout %[[PLAIN]] {dim_order = array<i64: 0, 2, 3, 1>}
// CHECK-NOT: kiln.relayout %[[PLAIN]]
// CHECK-DAG: kiln.conv2d %[[ARG]], %{{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
// CHECK-DAG: kiln.conv2d %[[IN]], %{{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
// CHECK-DAG: kiln.conv2d %[[IN]], %{{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NOT: kiln.relayout %[[ARG]]
func.func @shared_input(%a: !xn, %b: !x) -> (!x, !x, !x) {
  %w1 = kiln.weight "w1" = dense<0.5> : tensor<8x8x1x1xf16> : !w
  %w2 = kiln.weight "w2" = dense<0.5> : tensor<8x8x1x1xf16> : !w
  %w3 = kiln.weight "w3" = dense<0.5> : tensor<8x8x1x1xf16> : !w
  %c1 = kiln.conv2d %a, %w1 : (!xn, !w) -> !xn
  %c2 = kiln.conv2d %b, %w2 : (!x, !w) -> !x
  %c3 = kiln.conv2d %b, %w3 : (!x, !w) -> !x
  %r1 = kiln.relayout %c1 : (!xn) -> !x
  return %r1, %c2, %c3 : !x, !x, !x
}

// -----

// The epilogue kept channels last is the one cuDNN fuses: one bias (on
// either side of the add; [K, 1, 1] broadcasts from row-major), none after
// the convolution's own, not a splat; ReLU last.
!x = tensor<1x8x5x5xf16, #kiln.enc<row_major, cpu>>
!w = tensor<8x8x1x1xf16, #kiln.enc<row_major, cpu>>
!b = tensor<8xf16, #kiln.enc<row_major, cpu>>
!b4 = tensor<1x8x1x1xf16, #kiln.enc<row_major, cpu>>
!b3 = tensor<8x1x1xf16, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @bias_rules
// CHECK-DAG: %[[LHS:.*]] = kiln.weight "lhs" {{.*}} : tensor<1x8x1x1xf16, #kiln.enc<nhwc, cpu>>
// CHECK-DAG: %[[K11:.*]] = kiln.weight "k11" {{.*}} : tensor<8x1x1xf16, #kiln.enc<row_major, cpu>>
// CHECK-DAG: %[[AFTER:.*]] = kiln.weight "after_own" {{.*}} : tensor<1x8x1x1xf16, #kiln.enc<row_major, cpu>>
// CHECK-DAG: %[[SPLAT:.*]] = kiln.weight "splat" {{.*}} : tensor<1x8x1x1xf16, #kiln.enc<row_major, cpu>>
// CHECK: kiln.add %[[LHS]], %{{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
// CHECK: kiln.add %{{.*}}, %[[K11]] {{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
// CHECK: %[[OWN:.*]] = kiln.conv2d {{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[BACK:.*]] = kiln.relayout %[[OWN]] : {{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: kiln.add %[[BACK]], %[[AFTER]] {{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<row_major, cpu>>
// CHECK: %[[S:.*]] = kiln.conv2d {{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[SBACK:.*]] = kiln.relayout %[[S]]
// CHECK-NEXT: kiln.add %[[SBACK]], %[[SPLAT]] {{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<row_major, cpu>>
func.func @bias_rules(%x: !x) -> (!x, !x, !x, !x) {
  %w1 = kiln.weight "w1" = dense<0.5> : tensor<8x8x1x1xf16> : !w
  %w2 = kiln.weight "w2" = dense<0.5> : tensor<8x8x1x1xf16> : !w
  %w3 = kiln.weight "w3" = dense<0.5> : tensor<8x8x1x1xf16> : !w
  %w4 = kiln.weight "w4" = dense<0.5> : tensor<8x8x1x1xf16> : !w
  %own = kiln.weight "own" = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf16> : !b
  %lhs = kiln.weight "lhs" = dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]]]> : tensor<1x8x1x1xf16> : !b4
  %k11 = kiln.weight "k11" = dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]]> : tensor<8x1x1xf16> : !b3
  %after = kiln.weight "after_own" = dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]]]> : tensor<1x8x1x1xf16> : !b4
  %splat = kiln.weight "splat" = dense<0.25> : tensor<1x8x1x1xf16> : !b4
  %c1 = kiln.conv2d %x, %w1 : (!x, !w) -> !x
  %a1 = kiln.add %lhs, %c1 : (!b4, !x) -> !x
  %c2 = kiln.conv2d %x, %w2 : (!x, !w) -> !x
  %a2 = kiln.add %c2, %k11 : (!x, !b3) -> !x
  %c3 = kiln.conv2d %x, %w3, %own : (!x, !w, !b) -> !x
  %a3 = kiln.add %c3, %after : (!x, !b4) -> !x
  %c4 = kiln.conv2d %x, %w4 : (!x, !w) -> !x
  %a4 = kiln.add %c4, %splat : (!x, !b4) -> !x
  return %a1, %a2, %a3, %a4 : !x, !x, !x, !x
}

// -----

// Must not fire: 4 output channels (not a whole 16-byte group), and a
// filter that arrives as an input (its layout is the caller's).
!x = tensor<1x8x5x5xf16, #kiln.enc<row_major, cpu>>
!w4 = tensor<4x8x1x1xf16, #kiln.enc<row_major, cpu>>
!y4 = tensor<1x4x5x5xf16, #kiln.enc<row_major, cpu>>
!w = tensor<8x8x1x1xf16, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @not_chosen
// CHECK-NOT: nhwc
// CHECK: return
func.func @not_chosen(%x: !x, %filter: !w) -> (!y4, !x) {
  %w4 = kiln.weight "w4" = dense<0.5> : tensor<4x8x1x1xf16> : !w4
  %narrow = kiln.conv2d %x, %w4 : (!x, !w4) -> !y4
  %given = kiln.conv2d %x, %filter : (!x, !w) -> !x
  return %narrow, %given : !y4, !x
}
