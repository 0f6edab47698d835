// RUN: not kiln-opt %s -split-input-file 2>&1 | FileCheck %s

// The verifier re-runs type inference: each bad op gets a message that
// says what disagrees, at the op's location.

// CHECK: offset :[[# @LINE + 2]]:8: error: operand #1 is on cuda:0 but operand #0 is on cpu; insert an explicit kiln.transfer
func.func @device_mismatch(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>, %b: tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>) {
  %0 = kiln.add %a, %b : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>, tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>) -> tensor<2x3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: 'kiln.relu' op inferred type(s) 'tensor<2x3xf32, #kiln.enc<row_major, cpu>>' are incompatible with return type(s) of operation 'tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>'
func.func @result_on_another_device(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.relu %a : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf32, #kiln.enc<row_major, cuda:0>>
  return
}

// -----

// CHECK: error: 'kiln.relu' op operand #0 must be ranked tensor with a #kiln.enc encoding, but got 'tensor<2x3xf32>'
func.func @plain_tensor(%a: tensor<2x3xf32>) {
  %0 = kiln.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// CHECK: error: operands have different layouts; insert an explicit kiln.relayout
func.func @layout_mismatch(%a: tensor<1x2x3x4xf32, #kiln.enc<row_major, cpu>>, %b: tensor<1x2x3x4xf32, #kiln.enc<nhwc, cpu>>) {
  %0 = kiln.mul %a, %b : (tensor<1x2x3x4xf32, #kiln.enc<row_major, cpu>>, tensor<1x2x3x4xf32, #kiln.enc<nhwc, cpu>>) -> tensor<1x2x3x4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: operands have different element types: f32 and f16; insert an explicit kiln.cast
func.func @dtype_mismatch(%a: tensor<4xf32, #kiln.enc<row_major, cpu>>, %b: tensor<4xf16, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.add %a, %b : (tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf16, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: 'kiln.exp' op operand #0 must be floating-point kiln tensor
func.func @exp_of_integers(%a: tensor<4xi32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.exp %a : (tensor<4xi32, #kiln.enc<row_major, cpu>>) -> tensor<4xi32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: 'kiln.not' op operand #0 must be i1 kiln tensor
func.func @not_of_floats(%a: tensor<4xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.not %a : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: shapes [2x3] and [4] are not broadcast-compatible
func.func @broadcast_mismatch(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>, %b: tensor<4xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.add %a, %b : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: a broadcast operand must be row_major, got perm[1, 0]
func.func @permuted_broadcast_operand(%a: tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>, %b: tensor<3x4xf32, #kiln.enc<perm[1, 0], cpu>>) {
  %0 = kiln.add %a, %b : (tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>, tensor<3x4xf32, #kiln.enc<perm[1, 0], cpu>>) -> tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: matmul contraction mismatch: lhs has K=3, rhs has K=4
func.func @matmul_k(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>, %b: tensor<4x5xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.matmul %a, %b : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>, tensor<4x5xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x5xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: matmul batch dimensions are not broadcast-compatible
func.func @matmul_batch(%a: tensor<2x2x3xf32, #kiln.enc<row_major, cpu>>, %b: tensor<3x3x5xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.matmul %a, %b : (tensor<2x2x3xf32, #kiln.enc<row_major, cpu>>, tensor<3x3x5xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x2x5xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: conv2d input has 3 channels but filter expects 2 x 1 groups
func.func @conv_channels(%x: tensor<1x3x8x8xf32, #kiln.enc<row_major, cpu>>, %w: tensor<4x2x3x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.conv2d %x, %w : (tensor<1x3x8x8xf32, #kiln.enc<row_major, cpu>>, tensor<4x2x3x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x4x6x6xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: conv2d filter [4x3x9x9] does not fit the padded input [1x3x8x8]
func.func @conv_too_big(%x: tensor<1x3x8x8xf32, #kiln.enc<row_major, cpu>>, %w: tensor<4x3x9x9xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.conv2d %x, %w : (tensor<1x3x8x8xf32, #kiln.enc<row_major, cpu>>, tensor<4x3x9x9xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x4x1x1xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: image input must be laid out nchw or nhwc, got perm[3, 2, 1, 0]
func.func @conv_odd_layout(%x: tensor<1x3x8x8xf32, #kiln.enc<perm[3, 2, 1, 0], cpu>>, %w: tensor<4x3x3x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.conv2d %x, %w : (tensor<1x3x8x8xf32, #kiln.enc<perm[3, 2, 1, 0], cpu>>, tensor<4x3x3x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x4x6x6xf32, #kiln.enc<perm[3, 2, 1, 0], cpu>>
  return
}

// -----

// CHECK: error: padding must be four non-negative integers [top, left, bottom, right]
func.func @pool_padding(%x: tensor<1x3x8x8xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x3x4x4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: reshape: [2x3] has 6 elements but [4x2] has 8
func.func @reshape_count(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.reshape %a {shape = array<i64: 4, 2>} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<4x2xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// A shape whose product overflows is an error, not undefined behaviour.
// CHECK: error: reshape: [4294967296x4294967296x4294967296] has more elements than [2x3]
func.func @reshape_overflow(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.reshape %a {shape = array<i64: 4294967296, 4294967296, 4294967296>} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<6xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// Tensor types hold at most 2^40 elements.
// CHECK: error: a kiln tensor holds at most 2^40 elements
func.func @too_many_elements(%a: tensor<1048576x1048576x2xf32, #kiln.enc<row_major, cpu>>) {
  return
}

// -----

// CHECK: error: perm must be a permutation of 0..1
func.func @transpose_perm(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.transpose %a {perm = array<i64: 1, 1>} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<3x3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: cannot broadcast [2x3] to [3x3]
func.func @broadcast_shape(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.broadcast %a {shape = array<i64: 3, 3>} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<3x3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: slice: dimension 1 range [0, 4) is outside [0, 3]
func.func @slice_bounds(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.slice %a {starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: concat input #1 differs from input #0 in dimension 1
func.func @concat_shapes(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>, %b: tensor<2x4xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>, tensor<2x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4x3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: axis 2 is listed twice
func.func @reduce_axes(%a: tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.reduce_sum %a {axes = array<i64: 2, 2>} : (tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: axis 3 is out of range for rank 2
func.func @softmax_axis(%a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.softmax %a {axis = 3 : i64} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: batch_norm mean must be [4] of the input's element type, got tensor<3xf32, #kiln.enc<row_major, cpu>>
func.func @batch_norm_params(%x: tensor<1x4x2x2xf32, #kiln.enc<row_major, cpu>>, %p: tensor<4xf32, #kiln.enc<row_major, cpu>>, %q: tensor<3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.batch_norm %x, %p, %p, %q, %p : (tensor<1x4x2x2xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<3xf32, #kiln.enc<row_major, cpu>>, tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<1x4x2x2xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: layer_norm scale and bias must have shape [3] and the input's element type
func.func @layer_norm_scale(%x: tensor<2x3xf32, #kiln.enc<row_major, cpu>>, %s: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.layer_norm %x, %s {axis = 1 : i64} : (tensor<2x3xf32, #kiln.enc<row_major, cpu>>, tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: 'kiln.gather' op operand #1 must be i32 or i64 kiln tensor
func.func @gather_indices(%d: tensor<4xf32, #kiln.enc<row_major, cpu>>, %i: tensor<2xi8, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.gather %d, %i {axis = 0 : i64} : (tensor<4xf32, #kiln.enc<row_major, cpu>>, tensor<2xi8, #kiln.enc<row_major, cpu>>) -> tensor<2xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: unknown device 'gpu0' (expected cpu or cuda:N)
func.func @transfer_device(%a: tensor<4xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.transfer %a {to = "gpu0"} : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: cannot cast to f8E4M3FN (supported: f16, bf16, f32, f64, i1, i8, i16, i32, i64, u8, u16, u32, u64)
func.func @cast_target(%a: tensor<4xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.cast %a {to = f8E4M3FN} : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf8E4M3FN, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: 'kiln.constant' op value of type 'tensor<3xf32>' does not match result shape and dtype
func.func @constant_shape() {
  %0 = kiln.constant dense<1.0> : tensor<3xf32> : tensor<4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: 'kiln.weight' op weight name must not be empty
func.func @weight_name() {
  %0 = kiln.weight "" = dense<1.0> : tensor<4xf32> : tensor<4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: gather_elements indices must have the data's rank
func.func @gather_elements_rank(%d: tensor<3x4xf32, #kiln.enc<row_major, cpu>>, %i: tensor<6xi64, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.gather_elements %d, %i {axis = 1 : i64} : (tensor<3x4xf32, #kiln.enc<row_major, cpu>>, tensor<6xi64, #kiln.enc<row_major, cpu>>) -> tensor<6xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// Indices may be longer than the data along the axis, never across it.
// CHECK: error: gather_elements indices [4x2] exceed the data [3x4] outside the axis
func.func @gather_elements_exceeds(%d: tensor<3x4xf32, #kiln.enc<row_major, cpu>>, %i: tensor<4x2xi64, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.gather_elements %d, %i {axis = 1 : i64} : (tensor<3x4xf32, #kiln.enc<row_major, cpu>>, tensor<4x2xi64, #kiln.enc<row_major, cpu>>) -> tensor<4x2xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: axis 2 is out of range for rank 2
func.func @gather_elements_axis(%d: tensor<3x4xf32, #kiln.enc<row_major, cpu>>, %i: tensor<3x2xi64, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.gather_elements %d, %i {axis = 2 : i64} : (tensor<3x4xf32, #kiln.enc<row_major, cpu>>, tensor<3x2xi64, #kiln.enc<row_major, cpu>>) -> tensor<3x2xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: scatter_elements indices [3x2] exceed the data [2x4] outside the axis
func.func @scatter_elements_exceeds(%d: tensor<2x4xf32, #kiln.enc<row_major, cpu>>, %i: tensor<3x2xi64, #kiln.enc<row_major, cpu>>, %u: tensor<3x2xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.scatter_elements %d, %i, %u {axis = 1 : i64} : (tensor<2x4xf32, #kiln.enc<row_major, cpu>>, tensor<3x2xi64, #kiln.enc<row_major, cpu>>, tensor<3x2xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: scatter_elements updates must have the indices' shape
func.func @scatter_elements_updates(%d: tensor<2x4xf32, #kiln.enc<row_major, cpu>>, %i: tensor<2x2xi64, #kiln.enc<row_major, cpu>>, %u: tensor<2x3xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.scatter_elements %d, %i, %u {axis = 1 : i64} : (tensor<2x4xf32, #kiln.enc<row_major, cpu>>, tensor<2x2xi64, #kiln.enc<row_major, cpu>>, tensor<2x3xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: scatter_elements reduction must be none, add or mul
func.func @scatter_elements_reduction(%d: tensor<2x4xf32, #kiln.enc<row_major, cpu>>, %i: tensor<2x2xi64, #kiln.enc<row_major, cpu>>, %u: tensor<2x2xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "max"} : (tensor<2x4xf32, #kiln.enc<row_major, cpu>>, tensor<2x2xi64, #kiln.enc<row_major, cpu>>, tensor<2x2xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x4xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: 'kiln.gradient' op gradient of type 'tensor<3xf32, #kiln.enc<row_major, cpu>>' for a value of type 'tensor<2xf32, #kiln.enc<row_major, cpu>>'
func.func @gradient_type(%y: tensor<f32, #kiln.enc<row_major, cpu>>, %x: tensor<2xf32, #kiln.enc<row_major, cpu>>) {
  %0 = kiln.gradient %y wrt %x : (tensor<f32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> tensor<3xf32, #kiln.enc<row_major, cpu>>
  return
}

// -----

// CHECK: error: 'kiln.gradient' op gives one gradient per value it differentiates with respect to
func.func @gradient_count(%y: tensor<f32, #kiln.enc<row_major, cpu>>, %x: tensor<2xf32, #kiln.enc<row_major, cpu>>) {
  %0:2 = kiln.gradient %y wrt %x : (tensor<f32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>) -> (tensor<2xf32, #kiln.enc<row_major, cpu>>, tensor<2xf32, #kiln.enc<row_major, cpu>>)
  return
}
