// RUN: not kiln-opt %s -split-input-file 2>&1 | FileCheck %s

// Lengths that follow computed data, malformed: each an error naming it.

!v = tensor<30xi64, #kiln.enc<row_major, cpu>>
!n = tensor<i64, #kiln.enc<row_major, cpu>>

// The symbol a take_prefix binds must be listed `bound`.
// CHECK: error: 'kiln.take_prefix' op binds size symbol s0, which 'kiln.symbols' must list as `bound`
func.func @not_bound(%v: !v, %n: !n) attributes {kiln.symbols = [{name = "y", min = 0, max = 30, opt = 1}]} {
  %0 = kiln.take_prefix %v, %n {axis = 0 : i64, length = affine_map<()[s0] -> (s0)>} : (!v, !n) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  return
}

// -----

!v = tensor<30xi64, #kiln.enc<row_major, cpu>>
!n = tensor<i64, #kiln.enc<row_major, cpu>>

// One op binds each length.
// CHECK: error: 'kiln.take_prefix' op binds 'y', which another op binds too
func.func @bound_twice(%v: !v, %n: !n) attributes {kiln.symbols = [{name = "y", min = 0, max = 30, opt = 1, bound}]} {
  %0 = kiln.take_prefix %v, %n {axis = 0 : i64, length = affine_map<()[s0] -> (s0)>} : (!v, !n) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  %1 = kiln.take_prefix %v, %n {axis = 0 : i64, length = affine_map<()[s0] -> (s0)>} : (!v, !n) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  return
}

// -----

!v = tensor<30xi64, #kiln.enc<row_major, cpu>>
!n = tensor<i64, #kiln.enc<row_major, cpu>>

// A length's range ends within the entries it keeps a prefix of.
// CHECK: error: 'kiln.take_prefix' op binds 'y' up to 31, past the 30 entries it keeps a prefix of
func.func @past_the_input(%v: !v, %n: !n) attributes {kiln.symbols = [{name = "y", min = 0, max = 31, opt = 1, bound}]} {
  %0 = kiln.take_prefix %v, %n {axis = 0 : i64, length = affine_map<()[s0] -> (s0)>} : (!v, !n) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  return
}

// -----

!v = tensor<30xi64, #kiln.enc<row_major, cpu>>
!c = tensor<1xi32, #kiln.enc<row_major, cpu>>

// CHECK: error: take_prefix: the count must be an i64 scalar
func.func @count_not_a_scalar(%v: !v, %n: !c) attributes {kiln.symbols = [{name = "y", min = 0, max = 30, opt = 1, bound}]} {
  %0 = kiln.take_prefix %v, %n {axis = 0 : i64, length = affine_map<()[s0] -> (s0)>} : (!v, !c) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  return
}

// -----

!v = tensor<30xi64, #kiln.enc<row_major, cpu>>
!n = tensor<i64, #kiln.enc<row_major, cpu>>

// CHECK: error: take_prefix: `length` must map the size symbols to one of them
func.func @length_not_a_symbol(%v: !v, %n: !n) attributes {kiln.symbols = [{name = "y", min = 0, max = 30, opt = 1, bound}]} {
  %0 = kiln.take_prefix %v, %n {axis = 0 : i64, length = affine_map<()[s0] -> (s0 + 1)>} : (!v, !n) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0 + 1]>>
  return
}

// -----

// A length cannot also have a code.
// CHECK: error: 'func.func' op size symbol s0 must be {name, min, max, opt}, {name, min, max, opt, code} or {name, min, max, opt, bound}
func.func @bound_and_code() attributes {kiln.symbols = [{name = "y", min = 0, max = 30, opt = 1, bound, code = array<i64: 0, 1>}]} {
  return
}

// -----

// CHECK: error: 'func.func' op size symbol s0 ('y') needs 0 <= min <= opt <= max <= 2^31, got -1..30:1
func.func @negative_length() attributes {kiln.symbols = [{name = "y", min = -1, max = 30, opt = 1, bound}]} {
  return
}

// -----

!b = tensor<2x16x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x3x15xf32, #kiln.enc<row_major, cpu>>
!k = tensor<i64, #kiln.enc<row_major, cpu>>
!f = tensor<f32, #kiln.enc<row_major, cpu>>

// Scores for another number of boxes.
// CHECK: error: non_max_suppression takes static f32 boxes [B, N, 4] and scores [B, C, N]
func.func @scores_for_other_boxes(%boxes: !b, %scores: !s, %max: !k, %iou: !f, %min: !f) {
  %rows = kiln.non_max_suppression %boxes, %scores, %max, %iou, %min : (!b, !s, !k, !f, !f) -> tensor<90x3xi64, #kiln.enc<row_major, cpu>>
  return
}

// -----

!b = tensor<2x16x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x3x16xf32, #kiln.enc<row_major, cpu>>
!k = tensor<1xi64, #kiln.enc<row_major, cpu>>
!f = tensor<f32, #kiln.enc<row_major, cpu>>

// CHECK: error: non_max_suppression takes an i64 max_output and f32 thresholds, scalars
func.func @max_output_not_a_scalar(%boxes: !b, %scores: !s, %max: !k, %iou: !f, %min: !f) {
  %rows = kiln.non_max_suppression %boxes, %scores, %max, %iou, %min : (!b, !s, !k, !f, !f) -> tensor<96x3xi64, #kiln.enc<row_major, cpu>>
  return
}

// -----

!b = tensor<2x16x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x3x16xf32, #kiln.enc<row_major, cpu>>
!k = tensor<i64, #kiln.enc<row_major, cpu>>
!f = tensor<f32, #kiln.enc<row_major, cpu>>

// CHECK: error: non_max_suppression: center_point_box is 0 or 1
func.func @unknown_box_format(%boxes: !b, %scores: !s, %max: !k, %iou: !f, %min: !f) {
  %rows = kiln.non_max_suppression %boxes, %scores, %max, %iou, %min {center_point_box = 2 : i64} : (!b, !s, !k, !f, !f) -> tensor<96x3xi64, #kiln.enc<row_major, cpu>>
  return
}

// -----

!v = tensor<30xi64, #kiln.enc<row_major, cpu>>

// A length something is sized by, which no take_prefix binds.
// CHECK: error: 'func.func' op sizes values by 'y' (s0), which no kiln.take_prefix binds
func.func @unbound(%v: !v) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>> attributes {kiln.symbols = [{name = "y", min = 0, max = 30, opt = 1, bound}]} {
  %0 = kiln.reshape %v {shape = array<i64>, sizes = affine_map<()[s0] -> (s0)>, checked_at_run_time} : (!v) -> tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
  return %0 : tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
}
