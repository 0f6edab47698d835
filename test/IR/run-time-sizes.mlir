// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file --mlir-print-op-generic | kiln-opt -split-input-file | FileCheck %s

// Size symbols read at run time: a symbol with `code` is computed from the
// elements of integer arguments (12 k j: element j of argument k) and
// earlier symbols (include/kiln/Reference/SizeCode.h). A reshape to sizes
// read at run time cannot be proved to keep the element count:
// `checked_at_run_time` leaves it to each run. A reduction over axes read
// at run time takes them as `run_time_axes`, its result's sizes as
// `result_sizes`.

!x = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2xi64, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @reshape_read_at_run_time
// CHECK-SAME: {code = array<i64: 12, 1, 0>, max = 24 : i64, min = 0 : i64, name = "y.dim0", opt = 1 : i64}
// CHECK-SAME: {code = array<i64: 0, 24, 1, 0, 4>, max = 24 : i64, min = 0 : i64, name = "y.dim1", opt = 1 : i64}
func.func @reshape_read_at_run_time(%x: !x, %shape: !s) -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
    attributes {kiln.symbols = [{name = "y.dim0", min = 0, max = 24, opt = 1, code = array<i64: 12, 1, 0>},
                                {name = "y.dim1", min = 0, max = 24, opt = 1, code = array<i64: 0, 24, 1, 0, 4>}]} {
  // CHECK: kiln.reshape %{{.*}} {checked_at_run_time, shape = array<i64>, sizes = #map} {{.*}} -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %0 = kiln.reshape %x {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, s1)>, checked_at_run_time} : (!x) -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  return %0 : tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
}

// -----

!x = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
!a = tensor<1xi64, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @reduce_over_axes_read_at_run_time
func.func @reduce_over_axes_read_at_run_time(%x: !x, %axes: !a) -> tensor<?x?x?xf32, #kiln.enc<row_major, cpu, [s1, s2, s3]>>
    attributes {kiln.symbols = [{name = "y: axis #0", min = 0, max = 2, opt = 1, code = array<i64: 12, 1, 0>},
                                {name = "y.dim0", min = 0, max = 4, opt = 1, code = array<i64: 12, 1, 0, 0, 0, 9, 0, 1, 0, 2, 11>},
                                {name = "y.dim1", min = 0, max = 4, opt = 1, code = array<i64: 12, 1, 0, 0, 1, 9, 0, 1, 0, 3, 11>},
                                {name = "y.dim2", min = 0, max = 4, opt = 1, code = array<i64: 12, 1, 0, 0, 2, 9, 0, 1, 0, 4, 11>}]} {
  // CHECK: kiln.reduce_sum %{{.*}} {axes = array<i64>, keepdims = true, result_sizes = #{{.*}}, run_time_axes = #{{.*}}} {{.*}} -> tensor<?x?x?xf32, #kiln.enc<row_major, cpu, [s1, s2, s3]>>
  %0 = kiln.reduce_sum %x {axes = array<i64>, keepdims = true,
                           run_time_axes = affine_map<()[s0] -> (s0)>,
                           result_sizes = affine_map<()[s0, s1, s2, s3] -> (s1, s2, s3)>} : (!x) -> tensor<?x?x?xf32, #kiln.enc<row_major, cpu, [s1, s2, s3]>>
  return %0 : tensor<?x?x?xf32, #kiln.enc<row_major, cpu, [s1, s2, s3]>>
}

// -----

!x = tensor<5x6xf32, #kiln.enc<row_major, cpu>>
!b = tensor<1xi64, #kiln.enc<row_major, cpu>>

// A slice of bounds read at run time: every start, end and step, then the
// result's sizes.
// CHECK-LABEL: func.func @slice_read_at_run_time
func.func @slice_read_at_run_time(%x: !x, %start: !b) -> tensor<?x6xf32, #kiln.enc<row_major, cpu, [s1]>>
    attributes {kiln.symbols = [{name = "y: start of dimension 0", min = 0, max = 5, opt = 1, code = array<i64: 12, 1, 0, 0, 0, 8, 0, 5, 7>},
                                {name = "y.dim0", min = 0, max = 5, opt = 1, code = array<i64: 0, 5, 1, 0, 0, -1, 3, 2>}]} {
  // CHECK: kiln.slice %{{.*}} {ends = array<i64>, result_sizes = #{{.*}}, run_time_bounds = #{{.*}}, starts = array<i64>, steps = array<i64>} {{.*}} -> tensor<?x6xf32, #kiln.enc<row_major, cpu, [s1]>>
  %0 = kiln.slice %x {starts = array<i64>, ends = array<i64>, steps = array<i64>,
                      run_time_bounds = affine_map<()[s0, s1] -> (s0, 0, 5, 6, 1, 1)>,
                      result_sizes = affine_map<()[s0, s1] -> (s1, 6)>} : (!x) -> tensor<?x6xf32, #kiln.enc<row_major, cpu, [s1]>>
  return %0 : tensor<?x6xf32, #kiln.enc<row_major, cpu, [s1]>>
}

// -----

!n = tensor<i32, #kiln.enc<row_major, cpu>>

// The indices of a length read at run time.
// CHECK-LABEL: func.func @iota_read_at_run_time
// CHECK: kiln.iota {length = #{{.*}}} : tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
func.func @iota_read_at_run_time(%n: !n) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
    attributes {kiln.symbols = [{name = "y.dim0", min = 0, max = 100, opt = 1, code = array<i64: 12, 0, 0>}]} {
  %0 = kiln.iota {length = affine_map<()[s0] -> (s0)>} : tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  return %0 : tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
}
