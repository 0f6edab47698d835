// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s -mlir-print-op-generic | kiln-opt | FileCheck %s

// Every op parses, verifies and prints with its full functional type.

!m23 = tensor<2x3xf32, #kiln.enc<row_major, cpu>>
!m32 = tensor<3x2xf32, #kiln.enc<row_major, cpu>>
!b23 = tensor<2x3xi1, #kiln.enc<row_major, cpu>>
!v3 = tensor<3xf32, #kiln.enc<row_major, cpu>>
!img = tensor<1x4x8x8xf32, #kiln.enc<row_major, cpu>>
!imgh = tensor<1x4x8x8xf32, #kiln.enc<nhwc, cpu>>

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: !m23, %v: !v3, %c: !b23) -> !m23 {
  // CHECK: kiln.constant dense<1.000000e+00> : tensor<2x3xf32> : tensor<2x3xf32, #kiln.enc<row_major, cpu>>
  %k = kiln.constant dense<1.0> : tensor<2x3xf32> : !m23
  // CHECK: %[[W:.*]] = kiln.weight "w" = dense<2.000000e+00>
  %w = kiln.weight "w" = dense<2.0> : tensor<2x3xf32> : !m23
  // CHECK: kiln.neg %{{.*}} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.neg %x : (!m23) -> !m23
  // CHECK: kiln.abs
  %1 = kiln.abs %0 : (!m23) -> !m23
  // CHECK: kiln.exp
  %2 = kiln.exp %1 : (!m23) -> !m23
  // CHECK: kiln.log
  %3 = kiln.log %2 : (!m23) -> !m23
  // CHECK: kiln.sqrt
  %4 = kiln.sqrt %3 : (!m23) -> !m23
  // CHECK: kiln.rsqrt
  %5 = kiln.rsqrt %4 : (!m23) -> !m23
  // CHECK: kiln.tanh
  %6 = kiln.tanh %5 : (!m23) -> !m23
  // CHECK: kiln.sigmoid
  %7 = kiln.sigmoid %6 : (!m23) -> !m23
  // CHECK: kiln.relu
  %8 = kiln.relu %7 : (!m23) -> !m23
  // CHECK: kiln.gelu
  %9 = kiln.gelu %8 : (!m23) -> !m23
  // CHECK: kiln.erf
  %10 = kiln.erf %9 : (!m23) -> !m23
  // CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>, tensor<3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf32, #kiln.enc<row_major, cpu>>
  %11 = kiln.add %10, %v : (!m23, !v3) -> !m23
  // CHECK: kiln.sub
  %12 = kiln.sub %11, %k : (!m23, !m23) -> !m23
  // CHECK: kiln.mul
  %13 = kiln.mul %12, %w : (!m23, !m23) -> !m23
  // CHECK: kiln.div
  %14 = kiln.div %13, %k : (!m23, !m23) -> !m23
  // CHECK: kiln.pow
  %15 = kiln.pow %14, %k : (!m23, !m23) -> !m23
  // CHECK: kiln.max
  %16 = kiln.max %15, %x : (!m23, !m23) -> !m23
  // CHECK: kiln.min
  %17 = kiln.min %16, %x : (!m23, !m23) -> !m23
  // CHECK: kiln.lt {{.*}} -> tensor<2x3xi1, #kiln.enc<row_major, cpu>>
  %c0 = kiln.lt %17, %x : (!m23, !m23) -> !b23
  // CHECK: kiln.le
  %c1 = kiln.le %17, %x : (!m23, !m23) -> !b23
  // CHECK: kiln.gt
  %c2 = kiln.gt %17, %x : (!m23, !m23) -> !b23
  // CHECK: kiln.ge
  %c3 = kiln.ge %17, %x : (!m23, !m23) -> !b23
  // CHECK: kiln.eq
  %c4 = kiln.eq %17, %x : (!m23, !m23) -> !b23
  // CHECK: kiln.ne
  %c5 = kiln.ne %17, %x : (!m23, !m23) -> !b23
  // CHECK: kiln.and
  %c6 = kiln.and %c0, %c1 : (!b23, !b23) -> !b23
  // CHECK: kiln.or
  %c7 = kiln.or %c6, %c2 : (!b23, !b23) -> !b23
  // CHECK: kiln.not
  %c8 = kiln.not %c7 : (!b23) -> !b23
  // CHECK: kiln.select
  %18 = kiln.select %c8, %17, %x : (!b23, !m23, !m23) -> !m23
  return %18 : !m23
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: !m23, %i: tensor<4xi64, #kiln.enc<row_major, cpu>>) {
  // CHECK: kiln.cast %{{.*}} {to = f16} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf16, #kiln.enc<row_major, cpu>>
  %0 = kiln.cast %x {to = f16} : (!m23) -> tensor<2x3xf16, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.reshape %{{.*}} {shape = array<i64: 3, -1>} {{.*}} -> tensor<3x2xf32
  %1 = kiln.reshape %x {shape = array<i64: 3, -1>} : (!m23) -> !m32
  // CHECK: kiln.transpose %{{.*}} {perm = array<i64: 1, 0>}
  %2 = kiln.transpose %x {perm = array<i64: 1, 0>} : (!m23) -> !m32
  // CHECK: kiln.broadcast {{.*}} -> tensor<4x2x3xf32
  %3 = kiln.broadcast %x {shape = array<i64: 4, 2, 3>} : (!m23) -> tensor<4x2x3xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.slice {{.*}} -> tensor<1x2xf32
  %4 = kiln.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 2>} : (!m23) -> tensor<1x2xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.slice {{.*}} -> tensor<2x3xf32
  %5 = kiln.slice %x {starts = array<i64: 1, 2>, ends = array<i64: -1, -1>, steps = array<i64: -1, -1>} : (!m23) -> !m23
  // CHECK: kiln.concat {{.*}} -> tensor<4x3xf32
  %6 = kiln.concat %x, %x {axis = 0 : i64} : (!m23, !m23) -> tensor<4x3xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.pad {{.*}} -> tensor<3x6xf32
  %7 = kiln.pad %x {low = array<i64: 1, 1>, high = array<i64: 0, 2>, value = 1.0} : (!m23) -> tensor<3x6xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.gather {{.*}} -> tensor<2x4xf32
  %8 = kiln.gather %x, %i {axis = 1 : i64} : (!m23, tensor<4xi64, #kiln.enc<row_major, cpu>>) -> tensor<2x4xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.transfer %{{.*}} {to = "cuda:0"} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>
  %9 = kiln.transfer %x {to = "cuda:0"} : (!m23) -> tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>
  // CHECK: kiln.relayout {{.*}} -> tensor<2x3xf32, #kiln.enc<perm[1, 0], cpu>>
  %10 = kiln.relayout %x {dim_order = array<i64: 1, 0>} : (!m23) -> tensor<2x3xf32, #kiln.enc<perm[1, 0], cpu>>
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: !m23, %v: !v3) {
  // CHECK: kiln.reduce_sum {{.*}} -> tensor<2xf32
  %0 = kiln.reduce_sum %x {axes = array<i64: 1>} : (!m23) -> tensor<2xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.reduce_mean {{.*}} -> tensor<2x1xf32
  %1 = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (!m23) -> tensor<2x1xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.reduce_max {{.*}} -> tensor<f32
  %2 = kiln.reduce_max %x {axes = array<i64: 0, 1>} : (!m23) -> tensor<f32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.reduce_min
  %3 = kiln.reduce_min %x {axes = array<i64: 0>} : (!m23) -> !v3
  // CHECK: kiln.reduce_prod
  %4 = kiln.reduce_prod %x {axes = array<i64: 0>} : (!m23) -> !v3
  // CHECK: kiln.argmax {{.*}} -> tensor<2xi64
  %5 = kiln.argmax %x {axis = 1 : i64} : (!m23) -> tensor<2xi64, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.softmax
  %6 = kiln.softmax %x {axis = 1 : i64} : (!m23) -> !m23
  // CHECK: kiln.log_softmax
  %7 = kiln.log_softmax %x {axis = 0 : i64} : (!m23) -> !m23
  // CHECK: kiln.layer_norm
  %8 = kiln.layer_norm %x, %v, %v {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (!m23, !v3, !v3) -> !m23
  // CHECK: kiln.layer_norm {{.*}} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>, tensor<3xf32, #kiln.enc<row_major, cpu>>) ->
  %9 = kiln.layer_norm %x, %v {axis = 1 : i64} : (!m23, !v3) -> !m23
  return
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%x: !m23, %img: !img, %imgh: !imgh,
                        %w: tensor<6x4x3x3xf32, #kiln.enc<row_major, cpu>>,
                        %gw: tensor<4x2x3x3xf32, #kiln.enc<row_major, cpu>>,
                        %b6: tensor<6xf32, #kiln.enc<row_major, cpu>>,
                        %c4: tensor<4xf32, #kiln.enc<row_major, cpu>>) {
  // CHECK: kiln.matmul {{.*}} -> tensor<2x2xf32
  %0 = kiln.matmul %x, %x {transpose_b = true} : (!m23, !m23) -> tensor<2x2xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.matmul {{.*}} -> tensor<3x3xf32
  %1 = kiln.matmul %x, %x {transpose_a = true} : (!m23, !m23) -> tensor<3x3xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.conv2d {{.*}} -> tensor<1x6x4x4xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.conv2d %img, %w, %b6 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (!img, tensor<6x4x3x3xf32, #kiln.enc<row_major, cpu>>, tensor<6xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x6x4x4xf32, #kiln.enc<row_major, cpu>>
  // The result keeps the input's NHWC layout.
  // CHECK: kiln.conv2d {{.*}} -> tensor<1x4x6x6xf32, #kiln.enc<nhwc, cpu>>
  %3 = kiln.conv2d %imgh, %gw {groups = 2 : i64} : (!imgh, tensor<4x2x3x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x4x6x6xf32, #kiln.enc<nhwc, cpu>>
  // CHECK: kiln.conv2d {{.*}} -> tensor<1x6x4x4xf32
  %4 = kiln.conv2d %img, %w {dilations = array<i64: 2, 2>} : (!img, tensor<6x4x3x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x6x4x4xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.max_pool2d {{.*}} -> tensor<1x4x4x4xf32
  %5 = kiln.max_pool2d %img {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (!img) -> tensor<1x4x4x4xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.avg_pool2d {{.*}} -> tensor<1x4x3x3xf32
  %6 = kiln.avg_pool2d %img {kernel = array<i64: 3, 3>, strides = array<i64: 3, 3>, ceil_mode = true} : (!img) -> tensor<1x4x3x3xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.global_avg_pool {{.*}} -> tensor<1x4x1x1xf32
  %7 = kiln.global_avg_pool %img : (!img) -> tensor<1x4x1x1xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.batch_norm
  %8 = kiln.batch_norm %img, %c4, %c4, %c4, %c4 {epsilon = 1.0e-3 : f64} : (!img, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>) -> !img
  return
}

// CHECK-LABEL: func.func @derivatives
func.func @derivatives(%x: tensor<2xf32, #kiln.enc<row_major, cpu>>, %w: tensor<2xf32, #kiln.enc<row_major, cpu>>) -> (tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) {
  %p = kiln.mul %x, %w : (tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> tensor<2xf32, #kiln.enc<row_major, cpu>>
  %s = kiln.reduce_sum %p {axes = array<i64: 0>} : (tensor<2xf32, #kiln.enc<row_major, cpu>>) -> tensor<f32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.gradient %{{.*}} wrt %{{.*}}, %{{.*}} : (tensor<f32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> (tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>)
  %g:2 = kiln.gradient %s wrt %x, %w : (tensor<f32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> (tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>)
  return %g#0, %g#1 : tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>
}
