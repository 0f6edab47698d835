// RUN: not kiln-opt %s -split-input-file 2>&1 | FileCheck %s

// Symbolic shapes that do not agree are errors at the op, as static ones are.

!x = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
!y = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s1, s0]>>

// Different symbols are different sizes: no broadcast between them.
func.func @different_symbols(%x: !x, %y: !y) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}, {name = "b", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: shapes [s0xs1x768] and [s1xs0x768] are not broadcast-compatible
  %0 = kiln.add %x, %y : (!x, !y) -> !x
  return
}

// -----

!x = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>

// A stated type that is not the inferred one.
func.func @wrong_result(%x: !x) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}, {name = "b", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: 'kiln.reshape' op inferred type(s) 'tensor<?x768xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>' are incompatible with return type(s) of operation 'tensor<?x768xf32, #kiln.enc<row_major, cpu, [s0]>>'
  %0 = kiln.reshape %x {shape = array<i64: -1, 768>} : (!x) -> tensor<?x768xf32, #kiln.enc<row_major, cpu, [s0]>>
  return
}

// -----

!x = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>

// The element counts must agree for every size, not only for some.
func.func @reshape_count(%x: !x) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}, {name = "b", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: reshape: [s0xs1x768] and [s0x768] do not have the same number of elements for every size
  %0 = kiln.reshape %x {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, 768)>} : (!x) -> tensor<?x768xf32, #kiln.enc<row_major, cpu, [s0]>>
  return
}

// -----

!x = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>

// -1 must divide the symbolic count exactly.
func.func @reshape_infer(%x: !x) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}, {name = "b", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: reshape: cannot infer -1 for [s0xs1x768] into [-1x7]
  %0 = kiln.reshape %x {shape = array<i64: -1, 7>} : (!x) -> tensor<?x7xf32, #kiln.enc<row_major, cpu, [s0]>>
  return
}

// -----

!x = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>

func.func @reshape_sizes_with_shape(%x: !x) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}, {name = "b", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: reshape: a symbolic target (sizes) takes an empty shape and a map of symbols only
  %0 = kiln.reshape %x {shape = array<i64: 1>, sizes = affine_map<()[s0, s1] -> (s0, s1, 768)>} : (!x) -> !x
  return
}

// -----

!a = tensor<?x64xf32, #kiln.enc<row_major, cpu, [s0]>>

// Contracting two different sizes.
func.func @matmul_k(%a: !a) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: matmul contraction mismatch: lhs has K=64, rhs has K=s0
  %0 = kiln.matmul %a, %a : (!a, !a) -> tensor<?x64xf32, #kiln.enc<row_major, cpu, [s0]>>
  return
}

// -----

!x = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
!z = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s0]>>

func.func @concat_mismatch(%x: !x, %z: !z) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}, {name = "b", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: concat input #1 differs from input #0 in dimension 1
  %0 = kiln.concat %x, %z {axis = 2 : i64} : (!x, !z) -> !x
  return
}

// -----

!x = tensor<?x?x768xf32, #kiln.enc<row_major, cpu, [s0, s1]>>

// Reversing a dynamic dimension needs its size: not expressible yet.
func.func @slice_backwards(%x: !x) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}, {name = "b", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: slice: dynamic dimension 1 can only be sliced forward from a static start
  %0 = kiln.slice %x {starts = array<i64: 0, 3, 0>, ends = array<i64: 9223372036854775807, -1, 768>, steps = array<i64: 1, -1, 1>} : (!x) -> !x
  return
}

// -----

!x = tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>

// Normalising over a dynamic dimension: its scale would need that size.
func.func @layer_norm_dynamic_row(%x: !x, %g: tensor<8xf32, #kiln.enc<row_major, cpu>>) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}, {name = "b", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: layer_norm needs a static dimension 1
  %0 = kiln.layer_norm %x, %g, %g {axis = 1 : i64} : (!x, tensor<8xf32, #kiln.enc<row_major, cpu>>, tensor<8xf32, #kiln.enc<row_major, cpu>>) -> !x
  return
}

// -----

!img = tensor<1x3x?x32xf32, #kiln.enc<row_major, cpu, [s0]>>

// Convolutions take a dynamic batch, not dynamic images (yet).
func.func @conv_dynamic_height(%x: !img, %w: tensor<8x3x3x3xf32, #kiln.enc<row_major, cpu>>) attributes {kiln.symbols = [{name = "h", min = 1, max = 64, opt = 32}]} {
  // CHECK: error: conv2d needs a static dimension 2
  %0 = kiln.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (!img, tensor<8x3x3x3xf32, #kiln.enc<row_major, cpu>>) -> !img
  return
}

// -----

!x = tensor<?x4xf32, #kiln.enc<row_major, cpu, [s0]>>

// Ops whose rules are static-only say so instead of computing a wrong type.
func.func @pad_dynamic(%x: !x) attributes {kiln.symbols = [{name = "a", min = 1, max = 8, opt = 1}]} {
  // CHECK: error: pad does not take dynamic dimensions yet
  %0 = kiln.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 1>} : (!x) -> tensor<?x6xf32, #kiln.enc<row_major, cpu, [s0]>>
  return
}
