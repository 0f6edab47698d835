// RUN: kiln-opt %s -split-input-file -kiln-fuse-reductions=report=true -verify-diagnostics | FileCheck %s

!t = tensor<2x8x16xf32, #kiln.enc<row_major, cpu>>
!v = tensor<16xf32, #kiln.enc<row_major, cpu>>

// Bias + residual + layer norm (FasterTransformer's add-bias-residual
// layer norm) is one row-wise kernel; scale and shift stay inputs.
// CHECK-LABEL: func.func @residual_layer_norm
// CHECK: kiln.fusion reduction(%arg0, %arg1, %arg2, %arg3, %arg4)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.layer_norm
// CHECK-NEXT: kiln.yield
func.func @residual_layer_norm(%x: !t, %b: !v, %res: !t, %g: !v, %beta: !v) -> !t {
  %0 = kiln.add %x, %b : (!t, !v) -> !t
  %1 = kiln.add %res, %0 : (!t, !t) -> !t
  // expected-remark @+1 {{reduction region: add, add, layer_norm}}
  %2 = kiln.layer_norm %1, %g, %beta {axis = 2 : i64} : (!t, !v, !v) -> !t
  return %2 : !t
}

// -----

!t = tensor<4x32xf32, #kiln.enc<row_major, cpu>>

// A scaled softmax with a cast after it: prologue and epilogue.
// CHECK-LABEL: func.func @softmax_prologue_epilogue
// CHECK: kiln.fusion reduction(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.constant
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.softmax
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.yield
func.func @softmax_prologue_epilogue(%x: !t) -> tensor<4x32xf16, #kiln.enc<row_major, cpu>> {
  %c = kiln.constant dense<0.125> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %0 = kiln.mul %x, %c : (!t, tensor<f32, #kiln.enc<row_major, cpu>>) -> !t
  %1 = kiln.softmax %0 {axis = 1 : i64} : (!t) -> !t
  // expected-remark @+1 {{reduction region: mul, softmax, cast}}
  %2 = kiln.cast %1 {to = f16} : (!t) -> tensor<4x32xf16, #kiln.enc<row_major, cpu>>
  return %2 : tensor<4x32xf16, #kiln.enc<row_major, cpu>>
}

// -----

!t = tensor<4x32xf32, #kiln.enc<row_major, cpu>>
!r = tensor<4xf32, #kiln.enc<row_major, cpu>>

// sum(exp(x)) then log: the epilogue runs at the reduced shape.
// CHECK-LABEL: func.func @reduce_sum
// CHECK: kiln.fusion reduction(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.reduce_sum
// CHECK-NEXT: kiln.log
func.func @reduce_sum(%x: !t) -> !r {
  %0 = kiln.exp %x : (!t) -> !t
  %1 = kiln.reduce_sum %0 {axes = array<i64: 1>} : (!t) -> !r
  // expected-remark @+1 {{reduction region: exp, reduce_sum, log}}
  %2 = kiln.log %1 : (!r) -> !r
  return %2 : !r
}

// -----

!t = tensor<4x32xf32, #kiln.enc<row_major, cpu>>
!r = tensor<4xf32, #kiln.enc<row_major, cpu>>

// An expensive producer that something else also reads is not computed
// twice; a cheap one (neg) is duplicated into the region.
// CHECK-LABEL: func.func @shared_producers
// CHECK: %[[E:.*]] = kiln.exp %arg0
// CHECK: %[[N:.*]] = kiln.neg %arg0
// CHECK: kiln.reduce_sum %[[E]]
// CHECK: kiln.fusion reduction(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.neg
// CHECK-NEXT: kiln.reduce_max
// CHECK: return {{.*}}, %[[E]], %[[N]]
func.func @shared_producers(%x: !t) -> (!r, !r, !t, !t) {
  // expected-remark @+1 {{reduction fusion: 'exp' not fused into the region of 'reduce_sum': it has users outside the region and is too expensive to compute twice}}
  %e = kiln.exp %x : (!t) -> !t
  %n = kiln.neg %x : (!t) -> !t
  %0 = kiln.reduce_sum %e {axes = array<i64: 1>} : (!t) -> !r
  // expected-remark @-1 {{reduction fusion: 'reduce_sum' stays a kernel of its own: no elementwise producer or consumer to fuse}}
  // expected-remark @+1 {{reduction region: neg, reduce_max}}
  %1 = kiln.reduce_max %n {axes = array<i64: 1>} : (!t) -> !r
  return %0, %1, %e, %n : !r, !r, !t, !t
}

// -----

!a = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<16x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!v = tensor<8xf32, #kiln.enc<row_major, cpu>>

// A cheap producer that is a matmul's epilogue is not copied into the
// reduction (the matmul would then have two users and lose its epilogue).
// CHECK-LABEL: func.func @keeps_matmul_epilogue
// CHECK: %[[S:.*]] = kiln.add
// CHECK-NOT: kiln.fusion
func.func @keeps_matmul_epilogue(%x: !a, %w: !w, %b: !v) -> (!t, !t) {
  %0 = kiln.matmul %x, %w : (!a, !w) -> !t
  // expected-remark @+1 {{reduction fusion: 'add' not fused into the region of 'softmax': it is the epilogue of a matmul or convolution, which a copy would take away}}
  %1 = kiln.add %0, %b : (!t, !v) -> !t
  // expected-remark @+1 {{reduction fusion: 'softmax' stays a kernel of its own}}
  %2 = kiln.softmax %1 {axis = 1 : i64} : (!t) -> !t
  return %1, %2 : !t, !t
}

// -----

// Must not fire: a reduction the block-per-row kernel does not compute (over
// a leading axis; of integers) is a window loop of its own, not a region's
// anchor, so its producer stays out.
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!r = tensor<8xf32, #kiln.enc<row_major, cpu>>
!i = tensor<4x8xi32, #kiln.enc<row_major, cpu>>
!ir = tensor<4xi32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @not_row_reductions
// CHECK-NOT: kiln.fusion
// CHECK: kiln.reduce_sum {{.*}} -> tensor<8xf32
func.func @not_row_reductions(%x: !t, %n: !i) -> (!r, !ir) {
  %0 = kiln.exp %x : (!t) -> !t
  %1 = kiln.reduce_sum %0 {axes = array<i64: 0>} : (!t) -> !r
  %2 = kiln.add %n, %n : (!i, !i) -> !i
  %3 = kiln.reduce_sum %2 {axes = array<i64: 1>} : (!i) -> !ir
  return %1, %3 : !r, !ir
}
