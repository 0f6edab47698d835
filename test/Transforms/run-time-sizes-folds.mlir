// RUN: kiln-opt %s -split-input-file -kiln-constant-fold | FileCheck %s --check-prefix=FOLD
// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s --check-prefix=CANON

// Ops whose attributes exist only per run are neither evaluated at compile
// time nor folded away: their placeholders (empty bounds) are not values.

!c = tensor<3xf32, #kiln.enc<row_major, cpu>>

// A reversal whose bounds are constants in the run-time form: the result's
// type is the input's, but it is not the input.
// FOLD-LABEL: func.func @reversal
// FOLD: kiln.slice {{.*}}run_time_bounds
// CANON-LABEL: func.func @reversal
// CANON: kiln.slice {{.*}}run_time_bounds
func.func @reversal() -> !c {
  %x = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> : !c
  %0 = kiln.slice %x {starts = array<i64>, ends = array<i64>, steps = array<i64>,
                      run_time_bounds = affine_map<() -> (2, -1, -1)>,
                      result_sizes = affine_map<() -> (3)>} : (!c) -> !c
  return %0 : !c
}

// -----

!x = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
!r = tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
!f = tensor<?xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>

// A reshape checked at run time holds the only check of its sizes: a
// reshape of it is not folded through it.
// CANON-LABEL: func.func @checked_chain
// CANON: %[[CHECKED:.*]] = kiln.reshape %{{.*}} {checked_at_run_time
// CANON: kiln.reshape %[[CHECKED]]
func.func @checked_chain(%x: !x, %s: tensor<2xi64, #kiln.enc<row_major, cpu>>) -> !f
    attributes {kiln.symbols = [{name = "a", min = 0, max = 24, opt = 1, code = array<i64: 12, 1, 0>},
                                {name = "b", min = 0, max = 24, opt = 1, code = array<i64: 12, 1, 1>}]} {
  %0 = kiln.reshape %x {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, s1)>, checked_at_run_time} : (!x) -> !r
  %1 = kiln.reshape %0 {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0 * s1)>} : (!r) -> !f
  return %1 : !f
}
