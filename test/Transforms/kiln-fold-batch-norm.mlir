// RUN: kiln-opt %s -split-input-file -kiln-fold-batch-norm | FileCheck %s

// Batch norm after a convolution with a bias: per output channel o,
// a = scale / sqrt(var + eps), filter * a, bias (b - mean) * a + beta.
// Channel 0: a = 2 / sqrt(3 + 1) = 1: filter 1, bias (1 - 0.5) + 0.25 =
// 0.75; channel 1: a = 1.5 / sqrt(0 + 1) = 1.5: filter 2 * 1.5 = 3, bias
// (2 - 1) * 1.5 - 1 = 0.5.
!x = tensor<1x1x4x4xf32, #kiln.enc<row_major, cpu>>
!w = tensor<2x1x1x1xf32, #kiln.enc<row_major, cpu>>
!c = tensor<2xf32, #kiln.enc<row_major, cpu>>
!y = tensor<1x2x4x4xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @folds
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[}}{{\[}}{{\[}}[1.000000e+00]]], {{\[}}{{\[}}[3.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<[7.500000e-01, 5.000000e-01]> : tensor<2xf32>
// CHECK: %[[C:.*]] = kiln.conv2d %arg0, %[[W]], %[[B]] : ({{.*}}) -> tensor<1x2x4x4xf32, #kiln.enc<row_major, cpu>>
// CHECK-NEXT: return %[[C]]
// CHECK-NOT: kiln.batch_norm
func.func @folds(%x: !x) -> !y {
  %w = kiln.weight "w" = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32> : !w
  %b = kiln.weight "b" = dense<[1.0, 2.0]> : tensor<2xf32> : !c
  %scale = kiln.weight "scale" = dense<[2.0, 1.5]> : tensor<2xf32> : !c
  %beta = kiln.weight "beta" = dense<[0.25, -1.0]> : tensor<2xf32> : !c
  %mean = kiln.weight "mean" = dense<[0.5, 1.0]> : tensor<2xf32> : !c
  %var = kiln.weight "var" = dense<[3.0, 0.0]> : tensor<2xf32> : !c
  %c = kiln.conv2d %x, %w, %b {strides = array<i64: 1, 1>} : (!x, !w, !c) -> !y
  %n = kiln.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f64} : (!y, !c, !c, !c, !c) -> !y
  return %n : !y
}

// -----

// Without a bias the convolution gets one, (0 - mean) * a + beta: a =
// 2 / sqrt(0 + 1) = 2, filter 4 * 2 = 8, bias -4 * 2 + 1 = -7.
!x = tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>
!w = tensor<1x1x1x1xf32, #kiln.enc<row_major, cpu>>
!c = tensor<1xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @adds_bias
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<8.000000e+00> : tensor<1x1x1x1xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<-7.000000e+00> : tensor<1xf32>
// CHECK: kiln.conv2d %arg0, %[[W]], %[[B]]
func.func @adds_bias(%x: !x) -> !x {
  %w = kiln.weight "w" = dense<4.0> : tensor<1x1x1x1xf32> : !w
  %scale = kiln.weight "scale" = dense<2.0> : tensor<1xf32> : !c
  %beta = kiln.weight "beta" = dense<1.0> : tensor<1xf32> : !c
  %mean = kiln.weight "mean" = dense<4.0> : tensor<1xf32> : !c
  %var = kiln.weight "var" = dense<0.0> : tensor<1xf32> : !c
  %c = kiln.conv2d %x, %w : (!x, !w) -> !x
  %n = kiln.batch_norm %c, %scale, %beta, %mean, %var {epsilon = 1.0 : f64} : (!x, !c, !c, !c, !c) -> !x
  return %n : !x
}

// -----

// Must not fold: the convolution's result read by another op too, a filter
// that is an input, a normalisation whose parameters are inputs, a filter
// another convolution shares, and batch norm after something else.
!x = tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>
!w = tensor<1x1x1x1xf32, #kiln.enc<row_major, cpu>>
!c = tensor<1xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @stays
// CHECK-COUNT-5: kiln.batch_norm
// CHECK-NOT: kiln.constant
func.func @stays(%x: !x, %f: !w, %s: !c) -> (!x, !x, !x, !x, !x, !x, !x) {
  %w = kiln.weight "w" = dense<4.0> : tensor<1x1x1x1xf32> : !w
  %w2 = kiln.weight "w2" = dense<4.0> : tensor<1x1x1x1xf32> : !w
  %w3 = kiln.weight "w3" = dense<4.0> : tensor<1x1x1x1xf32> : !w
  %p = kiln.weight "p" = dense<1.0> : tensor<1xf32> : !c
  %c1 = kiln.conv2d %x, %w : (!x, !w) -> !x
  %n1 = kiln.batch_norm %c1, %p, %p, %p, %p : (!x, !c, !c, !c, !c) -> !x
  %c2 = kiln.conv2d %x, %f : (!x, !w) -> !x
  %n2 = kiln.batch_norm %c2, %p, %p, %p, %p : (!x, !c, !c, !c, !c) -> !x
  %c3 = kiln.conv2d %x, %w2 : (!x, !w) -> !x
  %n3 = kiln.batch_norm %c3, %s, %p, %p, %p : (!x, !c, !c, !c, !c) -> !x
  %c4 = kiln.conv2d %x, %w3 : (!x, !w) -> !x
  %c5 = kiln.conv2d %n3, %w3 : (!x, !w) -> !x
  %n4 = kiln.batch_norm %c4, %p, %p, %p, %p : (!x, !c, !c, !c, !c) -> !x
  %r = kiln.relu %x : (!x) -> !x
  %n5 = kiln.batch_norm %r, %p, %p, %p, %p : (!x, !c, !c, !c, !c) -> !x
  return %n1, %c1, %n2, %n3, %n4, %c5, %n5 : !x, !x, !x, !x, !x, !x, !x
}
