// RUN: kiln-opt %s -allow-unregistered-dialect -kiln-constant-fold -split-input-file | FileCheck %s
// RUN: kiln-opt %s -allow-unregistered-dialect -kiln-constant-fold=budget-bytes=8 -split-input-file | FileCheck %s --check-prefix=LIMIT

// Ops whose operands are all constants or weights are evaluated by the
// reference evaluator; expected values are computed by hand.

!v3 = tensor<3xf32, #kiln.enc<row_major, cpu>>
!m22 = tensor<2x2xf32, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: kiln.constant dense<[1.100000e+01, 1.200000e+01, 1.300000e+01]> : tensor<3xf32>
// CHECK-DAG: kiln.constant dense<[-1.000000e+00, -2.000000e+00, -3.000000e+00]> : tensor<3xf32>
// CHECK-DAG: kiln.constant dense<[1.000000e+00, 1.41421354, 1.73205078]> : tensor<3xf32>
// CHECK-DAG: kiln.constant dense<[false, true, true]> : tensor<3xi1>
// CHECK-DAG: kiln.constant dense<[1.100000e+01, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.neg
// CHECK-NOT: kiln.sqrt
// CHECK-NOT: kiln.gt
// CHECK-NOT: kiln.select
// LIMIT-LABEL: func.func @elementwise
// LIMIT: kiln.add
func.func @elementwise() -> (!v3, !v3, !v3, tensor<3xi1, #kiln.enc<row_major, cpu>>, !v3) {
  %a = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> : !v3
  %b = kiln.constant dense<10.0> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %0 = kiln.add %a, %b : (!v3, tensor<f32, #kiln.enc<row_major, cpu>>) -> !v3
  %1 = kiln.neg %a : (!v3) -> !v3
  %2 = kiln.sqrt %a : (!v3) -> !v3
  %one = kiln.constant dense<1.5> : tensor<3xf32> : !v3
  %3 = kiln.gt %a, %one : (!v3, !v3) -> tensor<3xi1, #kiln.enc<row_major, cpu>>
  %4 = kiln.select %3, %a, %0 : (tensor<3xi1, #kiln.enc<row_major, cpu>>, !v3, !v3) -> !v3
  return %0, %1, %2, %3, %4 : !v3, !v3, !v3, tensor<3xi1, #kiln.enc<row_major, cpu>>, !v3
}

// CHECK-LABEL: func.func @weights_count_as_constants
// CHECK: kiln.constant dense<{{\[}}[1.900000e+01, 2.200000e+01], [4.300000e+01, 5.000000e+01]]> : tensor<2x2xf32>
// CHECK-NOT: kiln.matmul
func.func @weights_count_as_constants() -> !m22 {
  %a = kiln.weight "a" = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> : !m22
  %b = kiln.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32> : !m22
  %0 = kiln.matmul %a, %b : (!m22, !m22) -> !m22
  return %0 : !m22
}

// An operand that is not constant stops folding.
// CHECK-LABEL: func.func @not_constant
// CHECK: kiln.add %arg0
func.func @not_constant(%x: !v3) -> !v3 {
  %a = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> : !v3
  %0 = kiln.add %x, %a : (!v3, !v3) -> !v3
  return %0 : !v3
}

// Folding follows chains: (a + a) * a.
// CHECK-LABEL: func.func @chain
// CHECK: kiln.constant dense<[2.000000e+00, 8.000000e+00, 1.800000e+01]>
// CHECK-NOT: kiln.mul
func.func @chain() -> !v3 {
  %a = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> : !v3
  %0 = kiln.add %a, %a : (!v3, !v3) -> !v3
  %1 = kiln.mul %0, %a : (!v3, !v3) -> !v3
  return %1 : !v3
}

// -----

// CHECK-LABEL: func.func @integers_and_casts
// Truncation toward zero; integer division by zero is defined as 0.
// CHECK-DAG: kiln.constant dense<[1, -1, 3]> : tensor<3xi32>
// CHECK-DAG: kiln.constant dense<[3, -3, 0]> : tensor<3xi32>
// The f16 product is rounded to f16.
// CHECK-DAG: kiln.constant dense<[3.000000e+00, 3.300780e-01]> : tensor<2xf16>
func.func @integers_and_casts() -> (tensor<3xi32, #kiln.enc<row_major, cpu>>, tensor<3xi32, #kiln.enc<row_major, cpu>>, tensor<2xf16, #kiln.enc<row_major, cpu>>) {
  %f = kiln.constant dense<[1.7, -1.7, 3.2]> : tensor<3xf32> : tensor<3xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.cast %f {to = i32} : (tensor<3xf32, #kiln.enc<row_major, cpu>>) -> tensor<3xi32, #kiln.enc<row_major, cpu>>
  %n = kiln.constant dense<[7, -7, 5]> : tensor<3xi32> : tensor<3xi32, #kiln.enc<row_major, cpu>>
  %d = kiln.constant dense<[2, 2, 0]> : tensor<3xi32> : tensor<3xi32, #kiln.enc<row_major, cpu>>
  %1 = kiln.div %n, %d : (tensor<3xi32, #kiln.enc<row_major, cpu>>, tensor<3xi32, #kiln.enc<row_major, cpu>>) -> tensor<3xi32, #kiln.enc<row_major, cpu>>
  %h = kiln.constant dense<[1.0, 0.110]> : tensor<2xf16> : tensor<2xf16, #kiln.enc<row_major, cpu>>
  %three = kiln.constant dense<3.0> : tensor<2xf16> : tensor<2xf16, #kiln.enc<row_major, cpu>>
  %2 = kiln.mul %h, %three : (tensor<2xf16, #kiln.enc<row_major, cpu>>, tensor<2xf16, #kiln.enc<row_major, cpu>>) -> tensor<2xf16, #kiln.enc<row_major, cpu>>
  return %0, %1, %2 : tensor<3xi32, #kiln.enc<row_major, cpu>>, tensor<3xi32, #kiln.enc<row_major, cpu>>, tensor<2xf16, #kiln.enc<row_major, cpu>>
}

// -----

!m23 = tensor<2x3xf32, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @data_movement
// CHECK-DAG: kiln.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-DAG: kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<6xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[3.000000e+00, 2.000000e+00, 1.000000e+00]]> : tensor<1x3xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00, 0.000000e+00]]> : tensor<2x4xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[4.000000e+00, 5.000000e+00, 6.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<3x3xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<4x3xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<2x3xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32> : tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>
func.func @data_movement() {
  %a = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32> : !m23
  %0 = kiln.transpose %a {perm = array<i64: 1, 0>} : (!m23) -> tensor<3x2xf32, #kiln.enc<row_major, cpu>>
  %1 = kiln.reshape %a {shape = array<i64: 6>} : (!m23) -> tensor<6xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.slice %a {starts = array<i64: 0, 2>, ends = array<i64: 1, -1>, steps = array<i64: 1, -1>} : (!m23) -> tensor<1x3xf32, #kiln.enc<row_major, cpu>>
  %r = kiln.slice %a {starts = array<i64: 0, 0>, ends = array<i64: 1, 3>, steps = array<i64: 1, 1>} : (!m23) -> tensor<1x3xf32, #kiln.enc<row_major, cpu>>
  %3 = kiln.pad %r {low = array<i64: 1, 0>, high = array<i64: 0, 1>} : (tensor<1x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x4xf32, #kiln.enc<row_major, cpu>>
  %i = kiln.constant dense<[-1, 0, 1]> : tensor<3xi64> : tensor<3xi64, #kiln.enc<row_major, cpu>>
  %4 = kiln.gather %a, %i {axis = 0 : i64} : (!m23, tensor<3xi64, #kiln.enc<row_major, cpu>>) -> tensor<3x3xf32, #kiln.enc<row_major, cpu>>
  %5 = kiln.concat %a, %a {axis = 0 : i64} : (!m23, !m23) -> tensor<4x3xf32, #kiln.enc<row_major, cpu>>
  %6 = kiln.broadcast %r {shape = array<i64: 2, 3>} : (tensor<1x3xf32, #kiln.enc<row_major, cpu>>) -> !m23
  %7 = kiln.transfer %a {to = "cuda:0"} : (!m23) -> tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>
  "test.use"(%0, %1, %2, %3, %4, %5, %6, %7) : (tensor<3x2xf32, #kiln.enc<row_major, cpu>>, tensor<6xf32, #kiln.enc<row_major, cpu>>, tensor<1x3xf32, #kiln.enc<row_major, cpu>>, tensor<2x4xf32, #kiln.enc<row_major, cpu>>, tensor<3x3xf32, #kiln.enc<row_major, cpu>>, tensor<4x3xf32, #kiln.enc<row_major, cpu>>, !m23, tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>) -> ()
  return
}

// CHECK-LABEL: func.func @reductions
// CHECK-DAG: kiln.constant dense<[6.000000e+00, 1.500000e+01]> : tensor<2xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[2.500000e+00, 3.500000e+00, 4.500000e+00]]> : tensor<1x3xf32>
// CHECK-DAG: kiln.constant dense<6.000000e+00> : tensor<f32>
// CHECK-DAG: kiln.constant dense<2> : tensor<2xi64>
// CHECK-DAG: kiln.constant dense<5.000000e-01> : tensor<2x2xf32>
// CHECK-DAG: kiln.constant dense<[1.200000e+02, 7.200000e+02]> : tensor<2xf32>
func.func @reductions() {
  %a = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32> : !m23
  %0 = kiln.reduce_sum %a {axes = array<i64: 1>} : (!m23) -> tensor<2xf32, #kiln.enc<row_major, cpu>>
  %1 = kiln.reduce_mean %a {axes = array<i64: 0>, keepdims = true} : (!m23) -> tensor<1x3xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.reduce_max %a {axes = array<i64: 0, 1>} : (!m23) -> tensor<f32, #kiln.enc<row_major, cpu>>
  %3 = kiln.argmax %a {axis = 1 : i64} : (!m23) -> tensor<2xi64, #kiln.enc<row_major, cpu>>
  %z = kiln.constant dense<7.0> : tensor<2x2xf32> : tensor<2x2xf32, #kiln.enc<row_major, cpu>>
  %4 = kiln.softmax %z {axis = 1 : i64} : (tensor<2x2xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x2xf32, #kiln.enc<row_major, cpu>>
  %b = kiln.constant dense<[[4.0, 5.0, 6.0], [8.0, 9.0, 10.0]]> : tensor<2x3xf32> : !m23
  %5 = kiln.reduce_prod %b {axes = array<i64: 1>} : (!m23) -> tensor<2xf32, #kiln.enc<row_major, cpu>>
  "test.use"(%0, %1, %2, %3, %4, %5) : (tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<1x3xf32, #kiln.enc<row_major, cpu>>, tensor<f32, #kiln.enc<row_major, cpu>>, tensor<2xi64, #kiln.enc<row_major, cpu>>, tensor<2x2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> ()
  return
}

// -----

!img = tensor<1x1x3x3xf32, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @convolution_and_pooling
// A 2x2 all-ones filter over a 3x3 ramp, plus bias 0.5.
// CHECK-DAG: kiln.constant dense<{{\[}}{{\[}}{{\[}}[1.250000e+01, 1.650000e+01], [2.450000e+01, 2.850000e+01]]]]> : tensor<1x1x2x2xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}{{\[}}{{\[}}[5.000000e+00, 6.000000e+00], [8.000000e+00, 9.000000e+00]]]]> : tensor<1x1x2x2xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}{{\[}}{{\[}}[3.000000e+00, 4.000000e+00], [6.000000e+00, 7.000000e+00]]]]> : tensor<1x1x2x2xf32>
// CHECK-DAG: kiln.constant dense<5.000000e+00> : tensor<1x1x1x1xf32>
// CHECK-NOT: kiln.conv2d
// CHECK-NOT: pool
func.func @convolution_and_pooling() {
  %x = kiln.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32> : !img
  %w = kiln.weight "w" = dense<1.0> : tensor<1x1x2x2xf32> : tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>
  %b = kiln.weight "b" = dense<0.5> : tensor<1xf32> : tensor<1xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.conv2d %x, %w, %b : (!img, tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>, tensor<1xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>
  %1 = kiln.max_pool2d %x {kernel = array<i64: 2, 2>} : (!img) -> tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.avg_pool2d %x {kernel = array<i64: 2, 2>} : (!img) -> tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>
  %3 = kiln.global_avg_pool %x : (!img) -> tensor<1x1x1x1xf32, #kiln.enc<row_major, cpu>>
  "test.use"(%0, %1, %2, %3) : (tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>, tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>, tensor<1x1x2x2xf32, #kiln.enc<row_major, cpu>>, tensor<1x1x1x1xf32, #kiln.enc<row_major, cpu>>) -> ()
  return
}

// CHECK-LABEL: func.func @normalisation
// (x - mean) / sqrt(var + eps) * scale + bias with var = 4 - eps: [(1-1)/2*2+1, (3-1)/2*2+1].
// CHECK-DAG: kiln.constant dense<{{\[}}{{\[}}{{\[}}[1.000000e+00]], {{\[}}[3.000000e+00]]]]> : tensor<1x2x1x1xf32>
// Layer norm of [1, 3]: mean 2, variance 1.
// CHECK-DAG: kiln.constant dense<{{\[}}[-1.000000e+00, 1.000000e+00]]> : tensor<1x2xf32>
func.func @normalisation() {
  %x = kiln.constant dense<[[[[1.0]], [[3.0]]]]> : tensor<1x2x1x1xf32> : tensor<1x2x1x1xf32, #kiln.enc<row_major, cpu>>
  %scale = kiln.constant dense<2.0> : tensor<2xf32> : tensor<2xf32, #kiln.enc<row_major, cpu>>
  %bias = kiln.constant dense<1.0> : tensor<2xf32> : tensor<2xf32, #kiln.enc<row_major, cpu>>
  %mean = kiln.constant dense<1.0> : tensor<2xf32> : tensor<2xf32, #kiln.enc<row_major, cpu>>
  %var = kiln.constant dense<3.99999> : tensor<2xf32> : tensor<2xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-5 : f64} : (tensor<1x2x1x1xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x2x1x1xf32, #kiln.enc<row_major, cpu>>
  %y = kiln.constant dense<[[1.0, 3.0]]> : tensor<1x2xf32> : tensor<1x2xf32, #kiln.enc<row_major, cpu>>
  %one = kiln.constant dense<1.0> : tensor<2xf32> : tensor<2xf32, #kiln.enc<row_major, cpu>>
  %1 = kiln.layer_norm %y, %one {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<1x2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x2xf32, #kiln.enc<row_major, cpu>>
  "test.use"(%0, %1) : (tensor<1x2x1x1xf32, #kiln.enc<row_major, cpu>>, tensor<1x2xf32, #kiln.enc<row_major, cpu>>) -> ()
  return
}

// -----

// Folding a large matmul is bounded by the time budget: 4096^3
// multiply-adds would take longer than the 60 s it has.
// CHECK-LABEL: func.func @too_costly
// CHECK: kiln.matmul
func.func @too_costly() -> tensor<4096x4096xf32, #kiln.enc<row_major, cpu>> {
  %a = kiln.constant dense<1.0> : tensor<4096x4096xf32> : tensor<4096x4096xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.matmul %a, %a : (tensor<4096x4096xf32, #kiln.enc<row_major, cpu>>, tensor<4096x4096xf32, #kiln.enc<row_major, cpu>>) -> tensor<4096x4096xf32, #kiln.enc<row_major, cpu>>
  return %0 : tensor<4096x4096xf32, #kiln.enc<row_major, cpu>>
}

// -----

// Remainders: mod takes the divisor's sign (Python's %), fmod the
// dividend's (C's fmod); integer x mod 0 is 0. Rounding is half to even.
// CHECK-LABEL: func.func @remainders_and_rounding
// CHECK-DAG: kiln.constant dense<[2, -2, 1, 0]> : tensor<4xi32>
// CHECK-DAG: kiln.constant dense<[-1, 1, 1, 0]> : tensor<4xi32>
// CHECK-DAG: kiln.constant dense<[5.000000e-01, -1.500000e+00]> : tensor<2xf32>
// CHECK-DAG: kiln.constant dense<[2.000000e+00, -2.000000e+00, 4.000000e+00, -0.000000e+00]> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<[1.000000e+00, -1.000000e+00, 0.000000e+00, 1.000000e+00]> : tensor<4xf32>
func.func @remainders_and_rounding() {
  %a = kiln.constant dense<[-7, 7, 7, 5]> : tensor<4xi32> : tensor<4xi32, #kiln.enc<row_major, cpu>>
  %b = kiln.constant dense<[3, -3, 3, 0]> : tensor<4xi32> : tensor<4xi32, #kiln.enc<row_major, cpu>>
  %0 = kiln.mod %a, %b : (tensor<4xi32, #kiln.enc<row_major, cpu>>, tensor<4xi32, #kiln.enc<row_major, cpu>>) -> tensor<4xi32, #kiln.enc<row_major, cpu>>
  %1 = kiln.mod %a, %b {fmod = true} : (tensor<4xi32, #kiln.enc<row_major, cpu>>, tensor<4xi32, #kiln.enc<row_major, cpu>>) -> tensor<4xi32, #kiln.enc<row_major, cpu>>
  %x = kiln.constant dense<[-7.5, -7.5]> : tensor<2xf32> : tensor<2xf32, #kiln.enc<row_major, cpu>>
  %y = kiln.constant dense<[2.0, -2.0]> : tensor<2xf32> : tensor<2xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.mod %x, %y : (tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> tensor<2xf32, #kiln.enc<row_major, cpu>>
  %r = kiln.constant dense<[2.5, -2.5, 3.5, -0.5]> : tensor<4xf32> : tensor<4xf32, #kiln.enc<row_major, cpu>>
  %3 = kiln.round %r : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>>
  %s = kiln.constant dense<[3.0, -0.25, 0.0, 9.0]> : tensor<4xf32> : tensor<4xf32, #kiln.enc<row_major, cpu>>
  %4 = kiln.sign %s : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>>
  "test.use"(%0, %1, %2, %3, %4) : (tensor<4xi32, #kiln.enc<row_major, cpu>>, tensor<4xi32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>) -> ()
  return
}

// -----

// Indexing ops: gather_elements, scatter_elements (assignment: the last
// duplicate wins; add accumulates), and a stable argsort (ties keep order).
// CHECK-LABEL: func.func @indexing
// CHECK-DAG: kiln.constant dense<{{\[}}[1.000000e+00, 1.000000e+00], [4.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: kiln.constant dense<[1.000000e+00, 3.000000e+01, 0.000000e+00, 0.000000e+00]> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<[1.000000e+00, 5.000000e+01, 0.000000e+00, 0.000000e+00]> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<[1, 3, 0, 2]> : tensor<4xi64>
// CHECK-DAG: kiln.constant dense<[0, 2, 3, 1]> : tensor<4xi64>
func.func @indexing() {
  %d = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> : tensor<2x2xf32, #kiln.enc<row_major, cpu>>
  %i = kiln.constant dense<[[0, 0], [1, 0]]> : tensor<2x2xi64> : tensor<2x2xi64, #kiln.enc<row_major, cpu>>
  %0 = kiln.gather_elements %d, %i {axis = 1 : i64} : (tensor<2x2xf32, #kiln.enc<row_major, cpu>>, tensor<2x2xi64, #kiln.enc<row_major, cpu>>) -> tensor<2x2xf32, #kiln.enc<row_major, cpu>>
  %base = kiln.constant dense<[1.0, 0.0, 0.0, 0.0]> : tensor<4xf32> : tensor<4xf32, #kiln.enc<row_major, cpu>>
  %at = kiln.constant dense<[1, 1]> : tensor<2xi64> : tensor<2xi64, #kiln.enc<row_major, cpu>>
  %up = kiln.constant dense<[20.0, 30.0]> : tensor<2xf32> : tensor<2xf32, #kiln.enc<row_major, cpu>>
  %1 = kiln.scatter_elements %base, %at, %up {axis = 0 : i64} : (tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<2xi64, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.scatter_elements %base, %at, %up {axis = 0 : i64, reduction = "add"} : (tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<2xi64, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>>
  %v = kiln.constant dense<[3.0, 1.0, 3.0, 2.0]> : tensor<4xf32> : tensor<4xf32, #kiln.enc<row_major, cpu>>
  %3 = kiln.argsort %v {axis = 0 : i64} : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xi64, #kiln.enc<row_major, cpu>>
  %4 = kiln.argsort %v {axis = 0 : i64, descending = true} : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xi64, #kiln.enc<row_major, cpu>>
  "test.use"(%0, %1, %2, %3, %4) : (tensor<2x2xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xi64, #kiln.enc<row_major, cpu>>, tensor<4xi64, #kiln.enc<row_major, cpu>>) -> ()
  return
}
