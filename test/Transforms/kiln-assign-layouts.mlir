// RUN: kiln-opt %s -split-input-file -kiln-assign-layouts | FileCheck %s

!xn = tensor<2x8x10x10xf32, #kiln.enc<nhwc, cpu>>
!x = tensor<2x8x10x10xf32, #kiln.enc<row_major, cpu>>
!wn = tensor<8x8x3x3xf32, #kiln.enc<nhwc, cpu>>
!sn = tensor<1x8x1x1xf32, #kiln.enc<nhwc, cpu>>

// An NHWC input is converted once, first; the convolution and the
// elementwise ops then compute row-major (types inferred again), a weight
// in NHWC is simply retyped (its data is logical), and the result is
// converted back once to the declared layout.
// CHECK-LABEL: func.func @nhwc_model
// CHECK-SAME: (%[[ARG:.*]]: tensor<2x8x10x10xf32, #kiln.enc<nhwc, cpu>>) -> tensor<2x8x10x10xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[IN:.*]] = kiln.relayout %[[ARG]] : (tensor<2x8x10x10xf32, #kiln.enc<nhwc, cpu>>) -> tensor<2x8x10x10xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: kiln.weight "w" {{.*}} : tensor<8x8x3x3xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: kiln.weight "s" {{.*}} : tensor<1x8x1x1xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: %[[C:.*]] = kiln.conv2d %[[IN]], {{.*}} -> tensor<2x8x10x10xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: %[[M:.*]] = kiln.mul %[[C]], {{.*}} -> tensor<2x8x10x10xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: %[[A:.*]] = kiln.add %[[M]], %[[IN]] {{.*}} -> tensor<2x8x10x10xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: %[[OUT:.*]] = kiln.relayout %[[A]] {dim_order = array<i64: 0, 2, 3, 1>} : (tensor<2x8x10x10xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x8x10x10xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: return %[[OUT]]
// CHECK-NOT: kiln.relayout
func.func @nhwc_model(%x: !xn) -> !xn {
  %w = kiln.weight "w" = dense<0.5> : tensor<8x8x3x3xf32> : !wn
  %s = kiln.weight "s" = dense<2.0> : tensor<1x8x1x1xf32> : !sn
  %c = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (!xn, !wn) -> !xn
  %m = kiln.mul %c, %s : (!xn, !sn) -> !xn
  %a = kiln.add %m, %x : (!xn, !xn) -> !xn
  return %a : !xn
}

// -----

// The model's own conversions between computed values disappear: a
// relayout is the same logical tensor.
!x = tensor<4x6xf32, #kiln.enc<row_major, cpu>>
!p = tensor<4x6xf32, #kiln.enc<perm[1, 0], cpu>>
// CHECK-LABEL: func.func @inner_relayout
// CHECK-NEXT: %[[E:.*]] = kiln.exp %arg0
// CHECK-NEXT: %[[T:.*]] = kiln.tanh %[[E]] : (tensor<4x6xf32, #kiln.enc<row_major, cpu>>) -> tensor<4x6xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: return %[[T]]
func.func @inner_relayout(%x: !x) -> !x {
  %e = kiln.exp %x : (!x) -> !x
  %p = kiln.relayout %e {dim_order = array<i64: 1, 0>} : (!x) -> !p
  %t = kiln.tanh %p : (!p) -> !p
  %r = kiln.relayout %t : (!p) -> !x
  return %r : !x
}

// -----

// Must not fire: a row-major model is left as it is, and a non-row-major
// input returned unchanged makes no round trip.
!x = tensor<4x6xf32, #kiln.enc<row_major, cpu>>
!p = tensor<4x6xf32, #kiln.enc<perm[1, 0], cpu>>
// CHECK-LABEL: func.func @row_major
// CHECK-NOT: kiln.relayout
// CHECK: return
func.func @row_major(%x: !x) -> !x {
  %e = kiln.exp %x : (!x) -> !x
  return %e : !x
}
// CHECK-LABEL: func.func @passthrough
// CHECK-NOT: kiln.relayout
// CHECK: return %arg0
func.func @passthrough(%x: !p) -> !p {
  return %x : !p
}
