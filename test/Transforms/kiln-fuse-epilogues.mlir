// RUN: kiln-opt %s -split-input-file -kiln-fuse-epilogues=report=true -verify-diagnostics | FileCheck %s

!a = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!v = tensor<8xf32, #kiln.enc<row_major, cpu>>

// Bias, activation, scaling, residual and output cast all join the matmul.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK: %[[R:.*]] = kiln.fusion matmul_epilogue(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.gelu
// CHECK-NEXT: kiln.constant dense<5.000000e-01>
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.yield
// CHECK: return %[[R]]
func.func @matmul_epilogue(%x: !a, %w: !w, %b: !v, %res: !t) -> tensor<4x8xf16, #kiln.enc<row_major, cpu>> {
  %half = kiln.constant dense<0.5> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %0 = kiln.matmul %x, %w : (!a, !w) -> !t
  %1 = kiln.add %0, %b : (!t, !v) -> !t
  %2 = kiln.gelu %1 : (!t) -> !t
  %3 = kiln.mul %2, %half : (!t, tensor<f32, #kiln.enc<row_major, cpu>>) -> !t
  %4 = kiln.add %res, %3 : (!t, !t) -> !t
  // expected-remark @+1 {{matmul_epilogue region: matmul, add, gelu, mul, add, cast; stops because its result is a model output}}
  %5 = kiln.cast %4 {to = f16} : (!t) -> tensor<4x8xf16, #kiln.enc<row_major, cpu>>
  return %5 : tensor<4x8xf16, #kiln.enc<row_major, cpu>>
}

// -----

!a = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!v = tensor<8xf32, #kiln.enc<row_major, cpu>>

// A matmul whose result has two users keeps its consumers apart: fusing
// into both would compute the matmul twice.
// CHECK-LABEL: func.func @shared_result
// CHECK-NOT: kiln.fusion
func.func @shared_result(%x: !a, %w: !w, %b: !v) -> (!t, !t) {
  // expected-remark @+1 {{epilogue fusion: 'matmul' has no epilogue: the result of 'matmul' has 2 users; fusing into each would compute the matmul again}}
  %0 = kiln.matmul %x, %w : (!a, !w) -> !t
  %1 = kiln.add %0, %b : (!t, !v) -> !t
  %2 = kiln.relu %0 : (!t) -> !t
  return %1, %2 : !t, !t
}

// -----

!a = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!v = tensor<8xf32, #kiln.enc<row_major, cpu>>

// The chain stops where a value has two users; what came before is fused,
// and the shared value is a region result.
// CHECK-LABEL: func.func @stops_at_shared_value
// CHECK: %[[R:.*]] = kiln.fusion matmul_epilogue
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: kiln.relu %[[R]]
// CHECK: kiln.neg %[[R]]
func.func @stops_at_shared_value(%x: !a, %w: !w, %b: !v) -> (!t, !t) {
  %0 = kiln.matmul %x, %w : (!a, !w) -> !t
  // expected-remark @+1 {{matmul_epilogue region: matmul, add; stops because the result of 'add' has 2 users; fusing into each would compute the matmul again}}
  %1 = kiln.add %0, %b : (!t, !v) -> !t
  %2 = kiln.relu %1 : (!t) -> !t
  %3 = kiln.neg %1 : (!t) -> !t
  return %2, %3 : !t, !t
}

// -----

!a = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!big = tensor<2x4x8xf32, #kiln.enc<row_major, cpu>>

// A consumer that broadcasts the result to a larger shape would compute
// each output element of the matmul several times: not fused.
// CHECK-LABEL: func.func @broadcasting_consumer
// CHECK-NOT: kiln.fusion
func.func @broadcasting_consumer(%x: !a, %w: !w, %y: !big) -> !big {
  // expected-remark @+1 {{epilogue fusion: 'matmul' has no epilogue: its consumer 'add' broadcasts the result to a larger shape}}
  %0 = kiln.matmul %x, %w : (!a, !w) -> !t
  %1 = kiln.add %0, %y : (!t, !big) -> !big
  return %1 : !big
}

// -----

!a = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>

// A non-elementwise consumer (softmax) is not an epilogue.
// CHECK-LABEL: func.func @softmax_consumer
// CHECK-NOT: kiln.fusion
func.func @softmax_consumer(%x: !a, %w: !w) -> !t {
  // expected-remark @+1 {{epilogue fusion: 'matmul' has no epilogue: its consumer 'softmax' is not elementwise}}
  %0 = kiln.matmul %x, %w : (!a, !w) -> !t
  %1 = kiln.softmax %0 {axis = 1 : i64} : (!t) -> !t
  return %1 : !t
}

// -----

!a = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!g = tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>

// Never across a device boundary.
// CHECK-LABEL: func.func @device_boundary
// CHECK-NOT: kiln.fusion
func.func @device_boundary(%x: !a, %w: !w) -> !g {
  // expected-remark @+1 {{epilogue fusion: 'matmul' has no epilogue: its consumer 'transfer' is not elementwise}}
  %0 = kiln.matmul %x, %w : (!a, !w) -> !t
  %1 = kiln.transfer %0 {to = "cuda:0"} : (!t) -> !g
  %2 = kiln.relu %1 : (!g) -> !g
  return %2 : !g
}

// -----

!img = tensor<1x4x8x8xf32, #kiln.enc<row_major, cpu>>
!f = tensor<4x4x3x3xf32, #kiln.enc<row_major, cpu>>
!c = tensor<4xf32, #kiln.enc<row_major, cpu>>

// Convolution, inference batch norm, residual add and relu: one kernel.
// CHECK-LABEL: func.func @conv_epilogue
// CHECK: kiln.fusion conv_epilogue
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.conv2d
// CHECK-NEXT: kiln.batch_norm
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.relu
// CHECK-NEXT: kiln.yield
func.func @conv_epilogue(%x: !img, %w: !f, %s: !c, %b: !c, %m: !c, %v: !c) -> !img {
  %0 = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (!img, !f) -> !img
  %1 = kiln.batch_norm %0, %s, %b, %m, %v : (!img, !c, !c, !c, !c) -> !img
  %2 = kiln.add %1, %x : (!img, !img) -> !img
  // expected-remark @+1 {{conv_epilogue region: conv2d, batch_norm, add, relu; stops because its result is a model output}}
  %3 = kiln.relu %2 : (!img) -> !img
  return %3 : !img
}

// -----

!a = tensor<4x4xf32, #kiln.enc<row_major, cpu>>
!c = tensor<4xf32, #kiln.enc<row_major, cpu>>

// Batch norm joins only a convolution's epilogue.
// CHECK-LABEL: func.func @batch_norm_after_matmul
// CHECK-NOT: kiln.fusion
func.func @batch_norm_after_matmul(%x: !a, %w: !a, %s: !c) -> !a {
  // expected-remark @+1 {{epilogue fusion: 'matmul' has no epilogue: batch_norm fuses only as the normalisation of a convolution's output}}
  %0 = kiln.matmul %x, %w : (!a, !a) -> !a
  %1 = kiln.batch_norm %0, %s, %s, %s, %s : (!a, !c, !c, !c, !c) -> !a
  return %1 : !a
}

// -----

// A weight kiln-quantized-weights kept int8 for the GEMM: its cast and
// scale join the matmul's region ahead of it (the tile loads dequantise),
// with or without an epilogue. An unmarked cast stays out (it was left for
// the folder).
!a = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
!q = tensor<16x8xi8, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!v = tensor<8xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @dequantizing_prologue
// CHECK: kiln.fusion matmul_epilogue(%arg1, %arg2, %arg0, %arg3)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK: kiln.fusion matmul_epilogue(%arg1, %arg2, %arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.yield
// CHECK: %[[C:.*]] = kiln.cast %arg1 {to = f32}
// CHECK: %[[M:.*]] = kiln.mul %[[C]], %arg2
// CHECK: kiln.matmul %arg0, %[[M]]
func.func @dequantizing_prologue(%x: !a, %wq: !q, %s: !v, %b: !v) -> (!t, !t, !t) {
  %0 = kiln.cast %wq {kiln.dequantize_in_gemm, to = f32} : (!q) -> !w
  %1 = kiln.mul %0, %s : (!w, !v) -> !w
  %2 = kiln.matmul %x, %1 : (!a, !w) -> !t
  // expected-remark @+1 {{matmul_epilogue region: cast, mul, matmul, add; its right operand is dequantised in its tile loads; stops because its result is a model output}}
  %3 = kiln.add %2, %b : (!t, !v) -> !t
  %4 = kiln.cast %wq {kiln.dequantize_in_gemm, to = f32} : (!q) -> !w
  %5 = kiln.mul %4, %s : (!w, !v) -> !w
  // expected-remark @+1 {{matmul_epilogue region: cast, mul, matmul; its right operand is dequantised in its tile loads; stops because its result is a model output}}
  %6 = kiln.matmul %x, %5 : (!a, !w) -> !t
  %7 = kiln.cast %wq {to = f32} : (!q) -> !w
  %8 = kiln.mul %7, %s : (!w, !v) -> !w
  // expected-remark @+1 {{epilogue fusion: 'matmul' has no epilogue: its result is a model output}}
  %9 = kiln.matmul %x, %8 : (!a, !w) -> !t
  return %3, %6, %9 : !t, !t, !t
}

// -----

// Must not fire: an integer matmul is a window loop, not a tiled kernel, so
// its consumers do not join it.
!a = tensor<4x16xi32, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xi32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xi32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @integer_matmul
// CHECK-NOT: kiln.fusion
// CHECK: kiln.matmul
// CHECK: kiln.add
func.func @integer_matmul(%x: !a, %w: !w) -> !t {
  %0 = kiln.matmul %x, %w : (!a, !w) -> !t
  %1 = kiln.add %0, %0 : (!t, !t) -> !t
  return %1 : !t
}
