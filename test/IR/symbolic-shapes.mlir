// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --mlir-print-op-generic > /dev/null

// Dynamic dimensions carry symbolic sizes over the model's size symbols;
// every op's rule computes its result's sizes from them, and the verifier
// re-derives each stated type (a wrong one fails: symbolic-shapes-invalid.mlir).

!x = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
!v = tensor<768xf32, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @encoder_family
// CHECK-SAME: kiln.symbols = [{max = 8 : i64, min = 1 : i64, name = "batch", opt = 1 : i64}, {max = 128 : i64, min = 1 : i64, name = "seq", opt = 128 : i64}]
func.func @encoder_family(%x: !x, %g: !v, %w: tensor<768x64xf32, #kiln.enc<row_major, cpu>>,
                          %mask: tensor<?x?xi64, #kiln.enc<row_major, cpu, [s0, s1]>>)
    attributes {kiln.symbols = [{name = "batch", min = 1, max = 8, opt = 1},
                                {name = "seq", min = 1, max = 128, opt = 128}]} {
  // Elementwise: equal sizes, and a static operand broadcast along them.
  // CHECK: kiln.add {{.*}} -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %0 = kiln.add %x, %g : (!x, !v) -> !x
  // CHECK: kiln.layer_norm {{.*}} -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %1 = kiln.layer_norm %0, %g, %g {axis = 2 : i64} : (!x, !v, !v) -> !x
  // A -1 is the quotient of the element counts as polynomials.
  // CHECK: kiln.reshape {{.*}} -> tensor<?x768xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
  %2 = kiln.reshape %1 {shape = array<i64: -1, 768>} : (!x) -> tensor<?x768xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
  // CHECK: kiln.matmul {{.*}} -> tensor<?x64xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
  %3 = kiln.matmul %2, %w : (tensor<?x768xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>, tensor<768x64xf32, #kiln.enc<row_major, cpu>>) -> tensor<?x64xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
  // A symbolic target names every size.
  // CHECK: kiln.reshape {{.*}}sizes = #map{{.*}} -> tensor<?x?x12x64xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %4 = kiln.reshape %1 {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, s1, 12, 64)>} : (!x) -> tensor<?x?x12x64xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  // CHECK: kiln.transpose {{.*}} -> tensor<?x12x?x64xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %5 = kiln.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x12x64xf32, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x12x?x64xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  // Batched attention scores: [batch, 12, seq, seq].
  // CHECK: kiln.matmul {{.*}}transpose_b = true{{.*}} -> tensor<?x12x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>
  %6 = kiln.matmul %5, %5 {transpose_b = true} : (tensor<?x12x?x64xf32, #kiln.enc<row_major, cpu, [s0, s1]>>, tensor<?x12x?x64xf32, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x12x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>
  // CHECK: kiln.softmax {{.*}} -> tensor<?x12x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>
  %7 = kiln.softmax %6 {axis = 3 : i64} : (tensor<?x12x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>) -> tensor<?x12x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>
  // The exporter's mask: [batch, seq] -> [batch, 1, 1, seq], compared, cast.
  // CHECK: kiln.reshape {{.*}} -> tensor<?x1x1x?xi64, #kiln.enc<row_major, cpu, [s0, s1]>>
  %8 = kiln.reshape %mask {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, 1, 1, s1)>} : (tensor<?x?xi64, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x1x1x?xi64, #kiln.enc<row_major, cpu, [s0, s1]>>
  %zero = kiln.constant dense<0> : tensor<i64> : tensor<i64, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.eq {{.*}} -> tensor<?x1x1x?xi1, #kiln.enc<row_major, cpu, [s0, s1]>>
  %9 = kiln.eq %8, %zero : (tensor<?x1x1x?xi64, #kiln.enc<row_major, cpu, [s0, s1]>>, tensor<i64, #kiln.enc<row_major, cpu>>) -> tensor<?x1x1x?xi1, #kiln.enc<row_major, cpu, [s0, s1]>>
  %ninf = kiln.constant dense<-1.0e4> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  // Select broadcasts [s0,1,1,s1] against [s0,12,s1,s1].
  // CHECK: kiln.select {{.*}} -> tensor<?x12x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>
  %10 = kiln.select %9, %ninf, %6 : (tensor<?x1x1x?xi1, #kiln.enc<row_major, cpu, [s0, s1]>>, tensor<f32, #kiln.enc<row_major, cpu>>, tensor<?x12x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>) -> tensor<?x12x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>
  // Reductions drop or keep their axes.
  // CHECK: kiln.reduce_mean {{.*}} -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %11 = kiln.reduce_mean %x {axes = array<i64: 2>, keepdims = false} : (!x) -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  // Concatenating along a dynamic dimension adds the sizes.
  // CHECK: kiln.concat {{.*}} -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1 * 2]>>
  %12 = kiln.concat %x, %x {axis = 1 : i64} : (!x, !x) -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1 * 2]>>
  // CHECK: kiln.concat {{.*}} -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1 + 1]>>
  %cls = kiln.slice %x {starts = array<i64: 0, 0, 0>, ends = array<i64: 9223372036854775807, 1, 768>, steps = array<i64: 1, 1, 1>} : (!x) -> tensor<?x1x768xf32, #kiln.enc<row_major, cpu, [s0]>>
  %13 = kiln.concat %cls, %x {axis = 1 : i64} : (tensor<?x1x768xf32, #kiln.enc<row_major, cpu, [s0]>>, !x) -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1 + 1]>>
  // A dynamic dimension sliced from a static start to its end.
  // CHECK: kiln.slice {{.*}} -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1 - 1]>>
  %14 = kiln.slice %x {starts = array<i64: 0, 1, 0>, ends = array<i64: 9223372036854775807, 9223372036854775807, 768>, steps = array<i64: 1, 1, 1>} : (!x) -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1 - 1]>>
  // CHECK: kiln.slice {{.*}} -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, (s1 - 1) ceildiv 2]>>
  %15 = kiln.slice %x {starts = array<i64: 0, 1, 0>, ends = array<i64: 9223372036854775807, 9223372036854775807, 768>, steps = array<i64: 1, 2, 1>} : (!x) -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, (s1 - 1) ceildiv 2]>>
  // Gathering rows of a static table by dynamic ids.
  %table = kiln.weight "embeddings" = dense<1.0> : tensor<16x768xf32> : tensor<16x768xf32, #kiln.enc<row_major, cpu>>
  // CHECK: kiln.gather {{.*}} -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %16 = kiln.gather %table, %mask {axis = 0 : i64} : (tensor<16x768xf32, #kiln.enc<row_major, cpu>>, tensor<?x?xi64, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  // CHECK: kiln.broadcast {{.*}} -> tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %17 = kiln.broadcast %g {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, s1, 768)>} : (!v) -> !x
  // CHECK: kiln.cast {{.*}} -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %18 = kiln.cast %mask {to = f32} : (tensor<?x?xi64, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  return
}

// -----

!img = tensor<?x3x32x32xf32, #kiln.enc<row_major, cpu, [s0]>>

// A CNN with a dynamic batch: convolution and pooling keep it.
// CHECK-LABEL: func.func @cnn_family
func.func @cnn_family(%x: !img, %w: tensor<8x3x3x3xf32, #kiln.enc<row_major, cpu>>,
                      %b: tensor<8xf32, #kiln.enc<row_major, cpu>>)
    attributes {kiln.symbols = [{name = "N", min = 1, max = 8, opt = 1}]} {
  // CHECK: kiln.conv2d {{.*}} -> tensor<?x8x32x32xf32, #kiln.enc<row_major, cpu, [s0]>>
  %0 = kiln.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (!img, tensor<8x3x3x3xf32, #kiln.enc<row_major, cpu>>, tensor<8xf32, #kiln.enc<row_major, cpu>>) -> tensor<?x8x32x32xf32, #kiln.enc<row_major, cpu, [s0]>>
  // CHECK: kiln.max_pool2d {{.*}} -> tensor<?x8x16x16xf32, #kiln.enc<row_major, cpu, [s0]>>
  %1 = kiln.max_pool2d %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<?x8x32x32xf32, #kiln.enc<row_major, cpu, [s0]>>) -> tensor<?x8x16x16xf32, #kiln.enc<row_major, cpu, [s0]>>
  // CHECK: kiln.global_avg_pool {{.*}} -> tensor<?x8x1x1xf32, #kiln.enc<row_major, cpu, [s0]>>
  %2 = kiln.global_avg_pool %1 : (tensor<?x8x16x16xf32, #kiln.enc<row_major, cpu, [s0]>>) -> tensor<?x8x1x1xf32, #kiln.enc<row_major, cpu, [s0]>>
  // CHECK: kiln.reshape {{.*}} -> tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0]>>
  %3 = kiln.reshape %2 {shape = array<i64: -1, 8>} : (tensor<?x8x1x1xf32, #kiln.enc<row_major, cpu, [s0]>>) -> tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0]>>
  // Layout conversions keep the sizes.
  // CHECK: kiln.relayout {{.*}} -> tensor<?x8x16x16xf32, #kiln.enc<nhwc, cpu, [s0]>>
  %4 = kiln.relayout %1 {dim_order = array<i64: 0, 2, 3, 1>} : (tensor<?x8x16x16xf32, #kiln.enc<row_major, cpu, [s0]>>) -> tensor<?x8x16x16xf32, #kiln.enc<nhwc, cpu, [s0]>>
  // CHECK: kiln.transfer {{.*}} -> tensor<?x8xf32, #kiln.enc<row_major, cuda:0, [s0]>>
  %5 = kiln.transfer %3 {to = "cuda:0"} : (tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0]>>) -> tensor<?x8xf32, #kiln.enc<row_major, cuda:0, [s0]>>
  return
}
