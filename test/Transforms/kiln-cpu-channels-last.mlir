// RUN: kiln-opt %s -split-input-file -kiln-cpu-channels-last | FileCheck %s

// A ResNet-style chain on the CPU: one conversion in, the filters retyped
// KRSC, batch norm, ReLU and max pooling channels last (batch norm's
// per-channel operands stay row-major), the second convolution fed
// channels last, the residual add's other full-size operand converted
// (the input's one conversion shared), a [1, C, 1, 1] constant of its own
// retyped, one conversion out for the result.
!x = tensor<2x8x8x8xf32, #kiln.enc<row_major, cpu>>
!w = tensor<8x8x3x3xf32, #kiln.enc<row_major, cpu>>
!c = tensor<8xf32, #kiln.enc<row_major, cpu>>
!s = tensor<1x8x1x1xf32, #kiln.enc<row_major, cpu>>
!p = tensor<2x8x4x4xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @chain
// CHECK: %[[IN:.*]] = kiln.relayout %arg0 {dim_order = array<i64: 0, 2, 3, 1>} : ({{.*}}row_major{{.*}}) -> tensor<2x8x8x8xf32, #kiln.enc<nhwc, cpu>>
// CHECK-DAG: %[[W1:.*]] = kiln.weight "w1" {{.*}} : tensor<8x8x3x3xf32, #kiln.enc<nhwc, cpu>>
// CHECK-DAG: %[[W2:.*]] = kiln.weight "w2" {{.*}} : tensor<8x8x3x3xf32, #kiln.enc<nhwc, cpu>>
// CHECK-DAG: %[[SCALE:.*]] = kiln.weight "scale" {{.*}} : tensor<8xf32, #kiln.enc<row_major, cpu>>
// CHECK-DAG: %[[GAIN:.*]] = kiln.weight "gain" {{.*}} : tensor<1x8x1x1xf32, #kiln.enc<nhwc, cpu>>
// CHECK: %[[C1:.*]] = kiln.conv2d %[[IN]], %[[W1]] {{.*}} -> tensor<2x8x8x8xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[N1:.*]] = kiln.batch_norm %[[C1]], %[[SCALE]], {{.*}} -> tensor<2x8x8x8xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[R1:.*]] = kiln.relu %[[N1]] {{.*}} -> tensor<2x8x8x8xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[C2:.*]] = kiln.conv2d %[[R1]], %[[W2]] {{.*}} -> tensor<2x8x8x8xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[G:.*]] = kiln.mul %[[C2]], %[[GAIN]] {{.*}} -> tensor<2x8x8x8xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[A:.*]] = kiln.add %[[G]], %[[IN]] {{.*}} -> tensor<2x8x8x8xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[R2:.*]] = kiln.relu %[[A]] {{.*}} -> tensor<2x8x8x8xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[P:.*]] = kiln.max_pool2d %[[R2]] {{.*}} -> tensor<2x8x4x4xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[OUT:.*]] = kiln.relayout %[[P]] : ({{.*}}nhwc{{.*}}) -> tensor<2x8x4x4xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: return %[[OUT]]
func.func @chain(%x: !x) -> !p {
  %w1 = kiln.weight "w1" = dense<0.5> : tensor<8x8x3x3xf32> : !w
  %w2 = kiln.weight "w2" = dense<0.25> : tensor<8x8x3x3xf32> : !w
  %scale = kiln.weight "scale" = dense<1.5> : tensor<8xf32> : !c
  %bias = kiln.weight "bias" = dense<0.1> : tensor<8xf32> : !c
  %mean = kiln.weight "mean" = dense<0.2> : tensor<8xf32> : !c
  %var = kiln.weight "var" = dense<0.9> : tensor<8xf32> : !c
  %gain = kiln.weight "gain" = dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]]]> : tensor<1x8x1x1xf32> : !s
  %c1 = kiln.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : (!x, !w) -> !x
  %n1 = kiln.batch_norm %c1, %scale, %bias, %mean, %var {epsilon = 1.0e-5 : f64} : (!x, !c, !c, !c, !c) -> !x
  %r1 = kiln.relu %n1 : (!x) -> !x
  %c2 = kiln.conv2d %r1, %w2 {padding = array<i64: 1, 1, 1, 1>} : (!x, !w) -> !x
  %g = kiln.mul %c2, %gain : (!x, !s) -> !x
  %a = kiln.add %g, %x : (!x, !x) -> !x
  %r2 = kiln.relu %a : (!x) -> !x
  %p = kiln.max_pool2d %r2 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (!x) -> !p
  return %p : !p
}

// -----

// The chain ends at an op that cannot follow it (a reduction over the
// channels): one conversion back, shared by its readers; global average
// pooling follows it, its [N, C, 1, 1] result converted back (a copy).
!x = tensor<1x4x6x6xf32, #kiln.enc<row_major, cpu>>
!w = tensor<4x4x1x1xf32, #kiln.enc<row_major, cpu>>
!r = tensor<1x1x6x6xf32, #kiln.enc<row_major, cpu>>
!g = tensor<1x4x1x1xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @chain_ends
// CHECK: %[[C:.*]] = kiln.conv2d {{.*}} -> tensor<1x4x6x6xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: %[[BACK:.*]] = kiln.relayout %[[C]] : ({{.*}}nhwc{{.*}}) -> tensor<1x4x6x6xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: %[[S:.*]] = kiln.reduce_sum %[[BACK]] {{.*}} -> tensor<1x1x6x6xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: %[[M:.*]] = kiln.reduce_max %[[BACK]]
// CHECK-NEXT: %[[GAP:.*]] = kiln.global_avg_pool %[[C]] : ({{.*}}nhwc{{.*}}) -> tensor<1x4x1x1xf32, #kiln.enc<nhwc, cpu>>
// CHECK-NEXT: kiln.relayout %[[GAP]] : ({{.*}}nhwc{{.*}}) -> tensor<1x4x1x1xf32, #kiln.enc<row_major, cpu>>
func.func @chain_ends(%x: !x) -> (!r, !r, !g) {
  %w = kiln.weight "w" = dense<0.5> : tensor<4x4x1x1xf32> : !w
  %c = kiln.conv2d %x, %w : (!x, !w) -> !x
  %s = kiln.reduce_sum %c {axes = array<i64: 1>, keepdims = true} : (!x) -> !r
  %m = kiln.reduce_max %c {axes = array<i64: 1>, keepdims = true} : (!x) -> !r
  %gap = kiln.global_avg_pool %c : (!x) -> !g
  return %s, %m, %gap : !r, !r, !g
}

// -----

// Must not fire: a grouped convolution, an f16 one, one whose filter is an
// input (its layout is the caller's), and one whose filter another op reads.
!x = tensor<1x4x5x5xf32, #kiln.enc<row_major, cpu>>
!wg = tensor<4x2x3x3xf32, #kiln.enc<row_major, cpu>>
!w = tensor<4x4x3x3xf32, #kiln.enc<row_major, cpu>>
!h = tensor<1x4x5x5xf16, #kiln.enc<row_major, cpu>>
!wh = tensor<4x4x3x3xf16, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @not_channels_last
// CHECK-NOT: nhwc
// CHECK-NOT: kiln.relayout
func.func @not_channels_last(%x: !x, %h: !h, %f: !w) -> (!x, !h, !x, !x, !w) {
  %wg = kiln.weight "wg" = dense<0.5> : tensor<4x2x3x3xf32> : !wg
  %wh = kiln.weight "wh" = dense<0.5> : tensor<4x4x3x3xf16> : !wh
  %ws = kiln.weight "ws" = dense<0.5> : tensor<4x4x3x3xf32> : !w
  %g = kiln.conv2d %x, %wg {groups = 2 : i64, padding = array<i64: 1, 1, 1, 1>} : (!x, !wg) -> !x
  %c = kiln.conv2d %h, %wh {padding = array<i64: 1, 1, 1, 1>} : (!h, !wh) -> !h
  %i = kiln.conv2d %x, %f {padding = array<i64: 1, 1, 1, 1>} : (!x, !w) -> !x
  %s = kiln.conv2d %x, %ws {padding = array<i64: 1, 1, 1, 1>} : (!x, !w) -> !x
  return %g, %c, %i, %s, %ws : !x, !h, !x, !x, !w
}
