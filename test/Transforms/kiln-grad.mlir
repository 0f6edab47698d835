// RUN: kiln-opt %s -split-input-file -kiln-grad=loss=loss | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-grad="loss=loss trainable=^w" | FileCheck %s --check-prefix=ONLY-W

// kiln-grad appends the vector-Jacobian products of the output `loss` and
// returns the loss and grad.W for every trainable float weight W; the other
// outputs go. Adjoints of inactive operands (inputs) are built and left to
// DCE.

!v = tensor<2x4xf32, #kiln.enc<row_major, cpu>>
!b = tensor<4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// A weight broadcast into a product: its adjoint is the product's other
// operand times the seed, summed over the broadcast dimension.
// CHECK-LABEL: func.func @broadcast_weight
// CHECK-SAME: -> (tensor<f32, #kiln.enc<row_major, cpu>> {kiln.name = "loss"}, tensor<4xf32, #kiln.enc<row_major, cpu>> {kiln.name = "grad.w"})
// CHECK: %[[SEED:.*]] = kiln.constant dense<1.000000e+00>
// CHECK: %[[SPREAD:.*]] = kiln.broadcast
// CHECK: %[[DW:.*]] = kiln.mul %[[SPREAD]], %arg0
// CHECK: %[[SUMMED:.*]] = kiln.reduce_sum %[[DW]] {axes = array<i64: 0>}
// CHECK: return %{{.*}}, %[[SUMMED]]
// ONLY-W-LABEL: func.func @broadcast_weight
// ONLY-W-SAME: {kiln.name = "grad.w"}
func.func @broadcast_weight(%x: !v {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !v {kiln.name = "y"}) {
  %w = kiln.weight "w" = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> : !b
  %y = kiln.mul %x, %w : (!v, !b) -> !v
  %loss = kiln.reduce_sum %y {axes = array<i64: 0, 1>} : (!v) -> !s
  return %loss, %y : !s, !v
}

// -----

!x = tensor<3x5xf32, #kiln.enc<row_major, cpu>>
!w = tensor<4x5xf32, #kiln.enc<row_major, cpu>>
!y = tensor<3x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// A matmul against a transposed weight (x w^T): dW = g^T x, as a matmul
// with transpose_a; the input's adjoint g w is built and left unused.
// CHECK-LABEL: func.func @matmul_transposed
// CHECK: kiln.matmul %{{.*}}, %w : (tensor<3x4xf32, {{.*}}>, tensor<4x5xf32, {{.*}}>) -> tensor<3x5xf32
// CHECK: %[[DW:.*]] = kiln.matmul %{{.*}}, %arg0 {transpose_a = true} : (tensor<3x4xf32, {{.*}}>, tensor<3x5xf32, {{.*}}>) -> tensor<4x5xf32
// CHECK: return %{{.*}}, %[[DW]]
func.func @matmul_transposed(%x: !x {kiln.name = "x"}) -> (!s {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<0.5> : tensor<4x5xf32> : !w
  %y = kiln.matmul %x, %w {transpose_b = true} : (!x, !w) -> !y
  %t = kiln.tanh %y : (!y) -> !y
  %loss = kiln.reduce_mean %t {axes = array<i64: 0, 1>} : (!y) -> !s
  return %loss : !s
}

// -----

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>
!i = tensor<4xi32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// What must not get a gradient: an integer weight, a weight outside
// `trainable` (ONLY-W), a comparison's path (the condition of a select).
// A weight the loss does not reach gets zeros.
// CHECK-LABEL: func.func @inactive_paths
// CHECK-SAME: -> (tensor<f32, {{.*}}> {kiln.name = "loss"}, tensor<4xf32, {{.*}}> {kiln.name = "grad.w"}, tensor<4xf32, {{.*}}> {kiln.name = "grad.unused"}, tensor<4xf32, {{.*}}> {kiln.name = "grad.scale"})
// CHECK-NOT: grad.steps
// CHECK: %[[ZEROS:.*]] = kiln.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[ZEROS]], %{{.*}} :
// ONLY-W-LABEL: func.func @inactive_paths
// ONLY-W-SAME: -> (tensor<f32, {{.*}}> {kiln.name = "loss"}, tensor<4xf32, {{.*}}> {kiln.name = "grad.w"})
func.func @inactive_paths(%x: !v {kiln.name = "x"}) -> (!s {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<[1.0, -2.0, 3.0, -4.0]> : tensor<4xf32> : !v
  %unused = kiln.weight "unused" = dense<1.0> : tensor<4xf32> : !v
  %scale = kiln.weight "scale" = dense<2.0> : tensor<4xf32> : !v
  %steps = kiln.weight "steps" = dense<[1, 2, 3, 4]> : tensor<4xi32> : !i
  %positive = kiln.gt %w, %x : (!v, !v) -> tensor<4xi1, #kiln.enc<row_major, cpu>>
  %scaled = kiln.mul %w, %scale : (!v, !v) -> !v
  %picked = kiln.select %positive, %scaled, %x : (tensor<4xi1, #kiln.enc<row_major, cpu>>, !v, !v) -> !v
  %n = kiln.cast %steps {to = f32} : (!i) -> !v
  %y = kiln.mul %picked, %n : (!v, !v) -> !v
  %loss = kiln.reduce_sum %y {axes = array<i64: 0>} : (!v) -> !s
  return %loss : !s
}

// -----

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// Ops whose derivative is zero almost everywhere (floor) stop activity: no
// gradient flows through them, and what they feed (a product over a
// reduction, which has no rule) is not differentiated, so it is no error.
// CHECK-LABEL: func.func @zero_derivative_stops
// CHECK-SAME: {kiln.name = "grad.w"}
// CHECK-NOT: kiln.reduce_prod {{.*}}kiln.floor
// CHECK: return
func.func @zero_derivative_stops(%x: !v {kiln.name = "x"}) -> (!s {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<[1.5, 2.5, 3.5, 4.5]> : tensor<4xf32> : !v
  %f = kiln.floor %w : (!v) -> !v
  %p = kiln.reduce_prod %f {axes = array<i64: 0>} : (!v) -> !s
  %y = kiln.mul %x, %w : (!v, !v) -> !v
  %s = kiln.reduce_sum %y {axes = array<i64: 0>} : (!v) -> !s
  %loss = kiln.add %s, %p : (!s, !s) -> !s
  return %loss : !s
}

// -----

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>
!g = tensor<4xf32, #kiln.enc<row_major, cuda:0>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// Copies to a GPU and back (as placement makes them): each adjoint is
// copied back the other way, the tanh's on the GPU.
// CHECK-LABEL: func.func @transfers
// CHECK: %[[T:.*]] = kiln.tanh
// CHECK: %[[TG:.*]] = kiln.transfer %{{.*}} {to = "cuda:0"}
// CHECK: kiln.mul %[[TG]], %{{.*}} : {{.*}}cuda:0
// CHECK: %[[BACK:.*]] = kiln.transfer %{{.*}} {to = "cpu"}
// CHECK: %[[DW:.*]] = kiln.mul %[[BACK]], %arg0
// CHECK: return %{{.*}}, %[[DW]]
func.func @transfers(%x: !v {kiln.name = "x"}) -> (!s {kiln.name = "loss"}) {
  %w = kiln.weight "w" = dense<1.0> : tensor<4xf32> : !v
  %y = kiln.mul %x, %w : (!v, !v) -> !v
  %g = kiln.transfer %y {to = "cuda:0"} : (!v) -> !g
  %t = kiln.tanh %g : (!g) -> !g
  %b = kiln.transfer %t {to = "cpu"} : (!g) -> !v
  %loss = kiln.reduce_sum %b {axes = array<i64: 0>} : (!v) -> !s
  return %loss : !s
}
