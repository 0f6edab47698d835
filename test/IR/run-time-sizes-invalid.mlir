// RUN: not kiln-opt %s -split-input-file 2>&1 | FileCheck %s

// Size symbols read at run time, malformed: each is an error naming it.

!x = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>

// A code that reads an argument that is not an integer tensor.
// CHECK: error: 'func.func' op size symbol 'n' reads element 0 of argument #0, which is not a static i64, i32 or i1 tensor that long
func.func @reads_floats(%x: !x) attributes {kiln.symbols = [{name = "n", min = 0, max = 8, opt = 1, code = array<i64: 12, 0, 0>}]} {
  return
}

// -----

!s = tensor<2xi64, #kiln.enc<row_major, cpu>>

// Past the argument's elements.
// CHECK: error: 'func.func' op size symbol 'n' reads element 2 of argument #0, which is not a static i64, i32 or i1 tensor that long
func.func @past_the_end(%s: !s) attributes {kiln.symbols = [{name = "n", min = 0, max = 8, opt = 1, code = array<i64: 12, 0, 2>}]} {
  return
}

// -----

!s = tensor<2xi64, #kiln.enc<row_major, cpu>>

// A code that leaves two values, one naming a later symbol, one reading a
// missing argument.
// CHECK: error: 'func.func' op size symbol s0 ('n'): a symbolic size is malformed
func.func @two_values(%s: !s) attributes {kiln.symbols = [{name = "n", min = 0, max = 8, opt = 1, code = array<i64: 12, 0, 0, 12, 0, 1>}]} {
  return
}

// -----

!s = tensor<2xi64, #kiln.enc<row_major, cpu>>

// CHECK: error: 'func.func' op size symbol s0 ('n'): a symbolic size names symbol #1 of 0
func.func @later_symbol(%s: !s) attributes {kiln.symbols = [{name = "n", min = 0, max = 8, opt = 1, code = array<i64: 1, 1>}, {name = "m", min = 1, max = 8, opt = 1}]} {
  return
}

// -----

!s = tensor<2xi64, #kiln.enc<row_major, cpu>>

// CHECK: error: 'func.func' op size symbol s0 ('n'): a symbolic size reads input #3 element 0 of 1 inputs
func.func @missing_argument(%s: !s) attributes {kiln.symbols = [{name = "n", min = 0, max = 8, opt = 1, code = array<i64: 12, 3, 0>}]} {
  return
}

// -----

!s = tensor<2xi64, #kiln.enc<row_major, cpu>>

// CHECK: error: 'func.func' op size symbol s0 ('n') needs -2^31 <= min <= opt <= max <= 2^31, got -5..8:-6
func.func @bad_range(%s: !s) attributes {kiln.symbols = [{name = "n", min = -5, max = 8, opt = -6, code = array<i64: 12, 0, 0>}]} {
  return
}

// -----

!x = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
!r = tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>

// Without checked_at_run_time, the element count must be provable.
// CHECK: error: reshape: [2x3x4] and [s0xs1] do not have the same number of elements for every size
func.func @unchecked(%x: !x, %s: tensor<2xi64, #kiln.enc<row_major, cpu>>) -> !r
    attributes {kiln.symbols = [{name = "a", min = 0, max = 24, opt = 1, code = array<i64: 12, 1, 0>},
                                {name = "b", min = 0, max = 24, opt = 1, code = array<i64: 12, 1, 1>}]} {
  %0 = kiln.reshape %x {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, s1)>} : (!x) -> !r
  return %0 : !r
}

// -----

!x = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
!r = tensor<?x?x?xf32, #kiln.enc<row_major, cpu, [s0, s0, s0]>>

// A reduction over axes read at run time keeps its dimensions.
// CHECK: error: a reduction over axes read at run time takes empty `axes`, keepdims, `run_time_axes` and `result_sizes` of the input's rank
func.func @reduce_without_keepdims(%x: !x, %a: tensor<1xi64, #kiln.enc<row_major, cpu>>) -> !r
    attributes {kiln.symbols = [{name = "a", min = 0, max = 2, opt = 1, code = array<i64: 12, 1, 0>}]} {
  %0 = kiln.reduce_sum %x {axes = array<i64>, keepdims = false, run_time_axes = affine_map<()[s0] -> (s0)>,
                           result_sizes = affine_map<()[s0] -> (s0, s0, s0)>} : (!x) -> !r
  return %0 : !r
}

// -----

!x = tensor<5x6xf32, #kiln.enc<row_major, cpu>>
!r = tensor<?x6xf32, #kiln.enc<row_major, cpu, [s0]>>

// Bounds read at run time replace the static ones: three per dimension.
// CHECK: error: slice: bounds read at run time take empty starts, ends and steps, `run_time_bounds` of 3 per dimension and `result_sizes` of one
func.func @slice_with_both(%x: !x, %b: tensor<1xi64, #kiln.enc<row_major, cpu>>) -> !r
    attributes {kiln.symbols = [{name = "n", min = 0, max = 5, opt = 1, code = array<i64: 12, 1, 0>}]} {
  %0 = kiln.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 5, 6>, steps = array<i64: 1, 1>,
                      run_time_bounds = affine_map<()[s0] -> (0, 0, s0, 6, 1, 1)>,
                      result_sizes = affine_map<()[s0] -> (s0, 6)>} : (!x) -> !r
  return %0 : !r
}

// -----

// An iota's type is an i64 vector of its length.
// CHECK: error: 'kiln.iota' op takes a map to one size and gives an i64 vector of that size
func.func @iota_of_another_length(%n: tensor<i32, #kiln.enc<row_major, cpu>>) -> tensor<4xi64, #kiln.enc<row_major, cpu>>
    attributes {kiln.symbols = [{name = "n", min = 0, max = 100, opt = 1, code = array<i64: 12, 0, 0>}]} {
  %0 = kiln.iota {length = affine_map<()[s0] -> (s0)>} : tensor<4xi64, #kiln.enc<row_major, cpu>>
  return %0 : tensor<4xi64, #kiln.enc<row_major, cpu>>
}
