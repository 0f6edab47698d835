// RUN: kiln-opt %s -canonicalize -split-input-file | FileCheck %s

// Every folder of the kiln ops, each with the case that must not fire.

!f = tensor<2x3xf32, #kiln.enc<row_major, cpu>>
!i = tensor<2x3xi32, #kiln.enc<row_major, cpu>>
!b = tensor<2x3xi1, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @add_zero
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @add_zero(%x: !f) -> (!f, !f) {
  %z = kiln.constant dense<0.0> : tensor<2x3xf32> : !f
  %0 = kiln.add %x, %z : (!f, !f) -> !f
  %1 = kiln.add %z, %x : (!f, !f) -> !f
  return %0, %1 : !f, !f
}

// A zero that broadcasts x to a larger shape changes the type: no fold.
// CHECK-LABEL: func.func @add_zero_broadcasting
// CHECK: kiln.add
func.func @add_zero_broadcasting(%x: tensor<3xf32, #kiln.enc<row_major, cpu>>) -> !f {
  %z = kiln.constant dense<0.0> : tensor<2x3xf32> : !f
  %0 = kiln.add %x, %z : (tensor<3xf32, #kiln.enc<row_major, cpu>>, !f) -> !f
  return %0 : !f
}

// CHECK-LABEL: func.func @add_nonzero
// CHECK: kiln.add
func.func @add_nonzero(%x: !f) -> !f {
  %z = kiln.constant dense<1.0e-30> : tensor<2x3xf32> : !f
  %0 = kiln.add %x, %z : (!f, !f) -> !f
  return %0 : !f
}

// CHECK-LABEL: func.func @mul_sub_div_pow_identities
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]]
func.func @mul_sub_div_pow_identities(%x: !f) -> (!f, !f, !f, !f) {
  %one = kiln.constant dense<1.0> : tensor<2x3xf32> : !f
  %zero = kiln.constant dense<0.0> : tensor<2x3xf32> : !f
  %0 = kiln.mul %one, %x : (!f, !f) -> !f
  %1 = kiln.sub %x, %zero : (!f, !f) -> !f
  %2 = kiln.div %x, %one : (!f, !f) -> !f
  %3 = kiln.pow %x, %one : (!f, !f) -> !f
  return %0, %1, %2, %3 : !f, !f, !f, !f
}

// 1/x and 0-x are not x.
// CHECK-LABEL: func.func @not_identities
// CHECK: kiln.div
// CHECK: kiln.sub
func.func @not_identities(%x: !f) -> (!f, !f) {
  %one = kiln.constant dense<1.0> : tensor<2x3xf32> : !f
  %zero = kiln.constant dense<0.0> : tensor<2x3xf32> : !f
  %0 = kiln.div %one, %x : (!f, !f) -> !f
  %1 = kiln.sub %zero, %x : (!f, !f) -> !f
  return %0, %1 : !f, !f
}

// x - x and x * 0 are zero for integers...
// CHECK-LABEL: func.func @integer_zeros
// CHECK: %[[Z:.*]] = kiln.constant dense<0> : tensor<2x3xi32>
// CHECK-NEXT: return %[[Z]], %[[Z]]
func.func @integer_zeros(%x: !i) -> (!i, !i) {
  %zero = kiln.constant dense<0> : tensor<2x3xi32> : !i
  %0 = kiln.sub %x, %x : (!i, !i) -> !i
  %1 = kiln.mul %x, %zero : (!i, !i) -> !i
  return %0, %1 : !i, !i
}

// ... but not for floats: inf - inf and NaN * 0 are NaN.
// CHECK-LABEL: func.func @float_not_zero
// CHECK: kiln.sub
// CHECK: kiln.mul
func.func @float_not_zero(%x: !f) -> (!f, !f) {
  %zero = kiln.constant dense<0.0> : tensor<2x3xf32> : !f
  %0 = kiln.sub %x, %x : (!f, !f) -> !f
  %1 = kiln.mul %x, %zero : (!f, !f) -> !f
  return %0, %1 : !f, !f
}

// CHECK-LABEL: func.func @idempotent
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor<2x3xf32{{[^%]*}}, %[[B:arg[0-9]+]]: tensor<2x3xi1
// CHECK-NEXT: return %[[X]], %[[X]], %[[B]], %[[B]], %[[X]]
func.func @idempotent(%x: !f, %b: !b, %c: !b) -> (!f, !f, !b, !b, !f) {
  %0 = kiln.max %x, %x : (!f, !f) -> !f
  %1 = kiln.min %x, %x : (!f, !f) -> !f
  %2 = kiln.and %b, %b : (!b, !b) -> !b
  %3 = kiln.or %b, %b : (!b, !b) -> !b
  %4 = kiln.select %c, %x, %x : (!b, !f, !f) -> !f
  return %0, %1, %2, %3, %4 : !f, !f, !b, !b, !f
}

// CHECK-LABEL: func.func @not_idempotent
// CHECK: kiln.max
// CHECK: kiln.and
func.func @not_idempotent(%x: !f, %y: !f, %b: !b, %c: !b) -> (!f, !b) {
  %0 = kiln.max %x, %y : (!f, !f) -> !f
  %1 = kiln.and %b, %c : (!b, !b) -> !b
  return %0, %1 : !f, !b
}

// CHECK-LABEL: func.func @boolean_identities
// CHECK-SAME: (%[[B:arg[0-9]+]]: tensor
// CHECK-NEXT: return %[[B]], %[[B]]
func.func @boolean_identities(%b: !b) -> (!b, !b) {
  %t = kiln.constant dense<true> : tensor<2x3xi1> : !b
  %f = kiln.constant dense<false> : tensor<2x3xi1> : !b
  %0 = kiln.and %b, %t : (!b, !b) -> !b
  %1 = kiln.or %f, %b : (!b, !b) -> !b
  return %0, %1 : !b, !b
}

// CHECK-LABEL: func.func @double_negation
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor<2x3xf32{{[^%]*}}, %[[B:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[N:.*]] = kiln.neg %[[X]]
// CHECK-NEXT: return %[[X]], %[[B]], %[[N]]
func.func @double_negation(%x: !f, %b: !b) -> (!f, !b, !f) {
  %0 = kiln.neg %x : (!f) -> !f
  %1 = kiln.neg %0 : (!f) -> !f
  %2 = kiln.not %b : (!b) -> !b
  %3 = kiln.not %2 : (!b) -> !b
  return %1, %3, %0 : !f, !b, !f
}

// CHECK-LABEL: func.func @select_constant_condition
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor<2x3xf32{{[^%]*}}, %[[Y:arg[0-9]+]]: tensor
// CHECK-NEXT: return %[[X]], %[[Y]]
func.func @select_constant_condition(%x: !f, %y: !f) -> (!f, !f) {
  %t = kiln.constant dense<true> : tensor<2x3xi1> : !b
  %f = kiln.constant dense<false> : tensor<2x3xi1> : !b
  %0 = kiln.select %t, %x, %y : (!b, !f, !f) -> !f
  %1 = kiln.select %f, %x, %y : (!b, !f, !f) -> !f
  return %0, %1 : !f, !f
}

// -----

!f32 = tensor<4xf32, #kiln.enc<row_major, cpu>>
!f16 = tensor<4xf16, #kiln.enc<row_major, cpu>>
!f64 = tensor<4xf64, #kiln.enc<row_major, cpu>>
!i8 = tensor<4xi8, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @cast_to_same_type
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: return %[[X]]
func.func @cast_to_same_type(%x: !f32) -> !f32 {
  %0 = kiln.cast %x {to = f32} : (!f32) -> !f32
  return %0 : !f32
}

// f16 -> f32 loses nothing, so f16 -> f32 -> f64 is f16 -> f64, and
// f16 -> f32 -> f16 is the identity.
// CHECK-LABEL: func.func @lossless_cast_chain
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[C:.*]] = kiln.cast %[[X]] {to = f64} : (tensor<4xf16, {{.*}}>) -> tensor<4xf64
// CHECK-NEXT: return %[[C]], %[[X]]
func.func @lossless_cast_chain(%x: !f16) -> (!f64, !f16) {
  %0 = kiln.cast %x {to = f32} : (!f16) -> !f32
  %1 = kiln.cast %0 {to = f64} : (!f32) -> !f64
  %2 = kiln.cast %0 {to = f16} : (!f32) -> !f16
  return %1, %2 : !f64, !f16
}

// f32 -> f16 rounds and i8 -> ... fine but f32 -> i8 truncates: keep both.
// CHECK-LABEL: func.func @lossy_cast_chain
// CHECK: kiln.cast %{{.*}} {to = f16}
// CHECK-NEXT: kiln.cast %{{.*}} {to = f32}
// CHECK-NEXT: kiln.cast %{{.*}} {to = i8}
// CHECK-NEXT: kiln.cast %{{.*}} {to = f32}
func.func @lossy_cast_chain(%x: !f32) -> (!f32, !f32) {
  %0 = kiln.cast %x {to = f16} : (!f32) -> !f16
  %1 = kiln.cast %0 {to = f32} : (!f16) -> !f32
  %2 = kiln.cast %x {to = i8} : (!f32) -> !i8
  %3 = kiln.cast %2 {to = f32} : (!i8) -> !f32
  return %1, %3 : !f32, !f32
}

// -----

!a = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @reshape_folds
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] {shape = array<i64: 4, 6>}
// CHECK-NEXT: return %[[X]], %[[R]]
func.func @reshape_folds(%x: !a) -> (!a, tensor<4x6xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.reshape %x {shape = array<i64: 2, 3, 4>} : (!a) -> !a
  %1 = kiln.reshape %x {shape = array<i64: 6, 4>} : (!a) -> tensor<6x4xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.reshape %1 {shape = array<i64: 4, 6>} : (tensor<6x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4x6xf32, #kiln.enc<row_major, cpu>>
  return %0, %2 : !a, tensor<4x6xf32, #kiln.enc<row_major, cpu>>
}

// CHECK-LABEL: func.func @transpose_folds
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[T:.*]] = kiln.transpose %[[X]] {perm = array<i64: 2, 0, 1>}
// CHECK-NEXT: return %[[X]], %[[X]], %[[T]]
func.func @transpose_folds(%x: !a) -> (!a, !a, tensor<4x2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.transpose %x {perm = array<i64: 0, 1, 2>} : (!a) -> !a
  %1 = kiln.transpose %x {perm = array<i64: 1, 0, 2>} : (!a) -> tensor<3x2x4xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.transpose %1 {perm = array<i64: 1, 0, 2>} : (tensor<3x2x4xf32, #kiln.enc<row_major, cpu>>) -> !a
  // Composition: [1, 0, 2] then [2, 1, 0] is [2, 0, 1].
  %3 = kiln.transpose %1 {perm = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4x2x3xf32, #kiln.enc<row_major, cpu>>
  return %0, %2, %3 : !a, !a, tensor<4x2x3xf32, #kiln.enc<row_major, cpu>>
}

// CHECK-LABEL: func.func @transpose_not_identity
// CHECK: kiln.transpose
func.func @transpose_not_identity(%x: tensor<3x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<3x3xf32, #kiln.enc<row_major, cpu>> {
  %0 = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<3x3xf32, #kiln.enc<row_major, cpu>>
  return %0 : tensor<3x3xf32, #kiln.enc<row_major, cpu>>
}

// CHECK-LABEL: func.func @broadcast_folds
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[B:.*]] = kiln.broadcast %[[X]] {shape = array<i64: 5, 2, 3, 4>}
// CHECK-NEXT: return %[[X]], %[[B]]
func.func @broadcast_folds(%x: !a) -> (!a, tensor<5x2x3x4xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.broadcast %x {shape = array<i64: 2, 3, 4>} : (!a) -> !a
  %1 = kiln.broadcast %x {shape = array<i64: 1, 2, 3, 4>} : (!a) -> tensor<1x2x3x4xf32, #kiln.enc<row_major, cpu>>
  %2 = kiln.broadcast %1 {shape = array<i64: 5, 2, 3, 4>} : (tensor<1x2x3x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<5x2x3x4xf32, #kiln.enc<row_major, cpu>>
  return %0, %2 : !a, tensor<5x2x3x4xf32, #kiln.enc<row_major, cpu>>
}

// CHECK-LABEL: func.func @slice_folds
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[S:.*]] = kiln.slice
// CHECK-NEXT: %[[R:.*]] = kiln.slice
// CHECK-NEXT: return %[[X]], %[[S]], %[[R]]
func.func @slice_folds(%x: !a) -> (!a, tensor<1x3x4xf32, #kiln.enc<row_major, cpu>>, !a) {
  %0 = kiln.slice %x {starts = array<i64: 0, 0, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 1>} : (!a) -> !a
  %1 = kiln.slice %x {starts = array<i64: 1, 0, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 1>} : (!a) -> tensor<1x3x4xf32, #kiln.enc<row_major, cpu>>
  // Reversal keeps the shape but is not the identity.
  %2 = kiln.slice %x {starts = array<i64: 1, 0, 0>, ends = array<i64: -1, 3, 4>, steps = array<i64: -1, 1, 1>} : (!a) -> !a
  return %0, %1, %2 : !a, tensor<1x3x4xf32, #kiln.enc<row_major, cpu>>, !a
}

// CHECK-LABEL: func.func @concat_and_pad_folds
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[P:.*]] = kiln.pad
// CHECK-NEXT: %[[C:.*]] = kiln.concat
// CHECK-NEXT: return %[[X]], %[[X]], %[[P]], %[[C]]
func.func @concat_and_pad_folds(%x: !a) -> (!a, !a, tensor<2x3x5xf32, #kiln.enc<row_major, cpu>>, tensor<4x3x4xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.concat %x {axis = 1 : i64} : (!a) -> !a
  %1 = kiln.pad %x {low = array<i64: 0, 0, 0>, high = array<i64: 0, 0, 0>} : (!a) -> !a
  %2 = kiln.pad %x {low = array<i64: 0, 0, 1>, high = array<i64: 0, 0, 0>} : (!a) -> tensor<2x3x5xf32, #kiln.enc<row_major, cpu>>
  %3 = kiln.concat %x, %x {axis = 0 : i64} : (!a, !a) -> tensor<4x3x4xf32, #kiln.enc<row_major, cpu>>
  return %0, %1, %2, %3 : !a, !a, tensor<2x3x5xf32, #kiln.enc<row_major, cpu>>, tensor<4x3x4xf32, #kiln.enc<row_major, cpu>>
}

// -----

!c = tensor<4xf32, #kiln.enc<row_major, cpu>>
!g0 = tensor<4xf32, #kiln.enc<row_major, cuda:0>>
!g1 = tensor<4xf32, #kiln.enc<row_major, cuda:1>>

// CHECK-LABEL: func.func @transfer_folds
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[T:.*]] = kiln.transfer %[[X]] {to = "cuda:1"}
// CHECK-NEXT: return %[[X]], %[[X]], %[[T]]
func.func @transfer_folds(%x: !c) -> (!c, !c, !g1) {
  %0 = kiln.transfer %x {to = "cpu"} : (!c) -> !c
  %1 = kiln.transfer %x {to = "cuda:0"} : (!c) -> !g0
  %2 = kiln.transfer %1 {to = "cpu"} : (!g0) -> !c
  %3 = kiln.transfer %1 {to = "cuda:1"} : (!g0) -> !g1
  return %0, %2, %3 : !c, !c, !g1
}

!nchw = tensor<1x2x3x4xf32, #kiln.enc<row_major, cpu>>
!nhwc = tensor<1x2x3x4xf32, #kiln.enc<nhwc, cpu>>
!odd = tensor<1x2x3x4xf32, #kiln.enc<perm[3, 2, 1, 0], cpu>>

// CHECK-LABEL: func.func @relayout_folds
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor
// CHECK-NEXT: %[[R:.*]] = kiln.relayout %[[X]] {dim_order = array<i64: 3, 2, 1, 0>}
// CHECK-NEXT: return %[[X]], %[[X]], %[[R]]
func.func @relayout_folds(%x: !nchw) -> (!nchw, !nchw, !odd) {
  %0 = kiln.relayout %x : (!nchw) -> !nchw
  %1 = kiln.relayout %x {dim_order = array<i64: 0, 2, 3, 1>} : (!nchw) -> !nhwc
  %2 = kiln.relayout %1 : (!nhwc) -> !nchw
  %3 = kiln.relayout %1 {dim_order = array<i64: 3, 2, 1, 0>} : (!nhwc) -> !odd
  return %0, %2, %3 : !nchw, !nchw, !odd
}

// -----

!a = tensor<2x4x3xf32, #kiln.enc<row_major, cpu>>
!at = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
!b = tensor<4x5xf32, #kiln.enc<row_major, cpu>>
!bt = tensor<5x4xf32, #kiln.enc<row_major, cpu>>
!r = tensor<2x3x5xf32, #kiln.enc<row_major, cpu>>

// Transposes of the last two dimensions become matmul flags.
// CHECK-LABEL: func.func @matmul_absorbs_transposes
// CHECK-SAME: (%[[A:arg[0-9]+]]: tensor<2x4x3xf32{{[^%]*}}, %[[B:arg[0-9]+]]: tensor<5x4xf32
// CHECK-NEXT: %[[M:.*]] = kiln.matmul %[[A]], %[[B]] {transpose_a = true, transpose_b = true}
// CHECK-NEXT: return %[[M]]
func.func @matmul_absorbs_transposes(%a: !a, %b: !bt) -> !r {
  %ta = kiln.transpose %a {perm = array<i64: 0, 2, 1>} : (!a) -> !at
  %tb = kiln.transpose %b {perm = array<i64: 1, 0>} : (!bt) -> !b
  %0 = kiln.matmul %ta, %tb : (!at, !b) -> !r
  return %0 : !r
}

// A transpose that moves a batch dimension is not a flag.
// CHECK-LABEL: func.func @matmul_keeps_batch_transposes
// CHECK: kiln.transpose
// CHECK: kiln.matmul
// CHECK-NOT: transpose_a
func.func @matmul_keeps_batch_transposes(%a: tensor<3x2x4xf32, #kiln.enc<row_major, cpu>>, %b: !b) -> tensor<2x3x5xf32, #kiln.enc<row_major, cpu>> {
  %t = kiln.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<3x2x4xf32, #kiln.enc<row_major, cpu>>) -> !at
  %0 = kiln.matmul %t, %b : (!at, !b) -> !r
  return %0 : !r
}
