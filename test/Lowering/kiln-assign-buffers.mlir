// RUN: kiln-opt %s -kiln-form-steps -kiln-assign-streams -kiln-assign-buffers | FileCheck %s
// RUN: kiln-opt %s -kiln-form-steps -kiln-assign-streams=max-streams=1 -kiln-assign-buffers | FileCheck %s --check-prefix=SERIAL
// RUN: not kiln-opt %s -split-input-file -kiln-assign-buffers 2>&1 | FileCheck %s --check-prefix=ERROR

!v = tensor<16xf32, #kiln.enc<row_major, cpu>>

// A chain ping-pongs between two 64-byte buffers; the returned value is
// never overwritten.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: exec.arena_bytes = 128 : i64, {{.*}}exec.unshared_bytes = 256 : i64
// CHECK: offsets = array<i64: 0>
// CHECK: offsets = array<i64: 64>
// CHECK: offsets = array<i64: 0>
// CHECK: offsets = array<i64: 64>
func.func @chain(%x: !v) -> !v {
  %0 = kiln.exp %x : (!v) -> !v
  %1 = kiln.relu %0 : (!v) -> !v
  %2 = kiln.tanh %1 : (!v) -> !v
  %3 = kiln.neg %2 : (!v) -> !v
  return %3 : !v
}

// Results returned by the function stay live to the end: no reuse.
// CHECK-LABEL: func.func @all_returned
// CHECK-SAME: exec.arena_bytes = 192 : i64, {{.*}}exec.unshared_bytes = 192 : i64
func.func @all_returned(%x: !v) -> (!v, !v, !v) {
  %0 = kiln.exp %x : (!v) -> !v
  %1 = kiln.relu %0 : (!v) -> !v
  %2 = kiln.tanh %1 : (!v) -> !v
  return %0, %1, %2 : !v, !v, !v
}

// Concurrent branches never share a buffer; a serial plan of the same
// graph reuses more and has a lower peak.
// CHECK-LABEL: func.func @branches
// CHECK-SAME: exec.arena_bytes = 256 : i64
// CHECK: exec.step(%arg0) {offsets = array<i64: 0>, stream = 0 : i64}
// CHECK: exec.step(%arg0) {offsets = array<i64: 64>, stream = 1 : i64}
// CHECK: exec.step({{.*}}) {offsets = array<i64: 128>, stream = 0 : i64}
// CHECK: exec.step({{.*}}) {event = 0 : i64, offsets = array<i64: 192>, stream = 1 : i64}
// CHECK: exec.step({{.*}}) {offsets = array<i64: 0>, stream = 0 : i64, waits = array<i64: 0>}
// SERIAL-LABEL: func.func @branches
// SERIAL-SAME: exec.arena_bytes = 192 : i64
func.func @branches(%x: !v) -> !v {
  %a0 = kiln.exp %x : (!v) -> !v
  %b0 = kiln.tanh %x : (!v) -> !v
  %a1 = kiln.relu %a0 : (!v) -> !v
  %b1 = kiln.neg %b0 : (!v) -> !v
  %s = kiln.add %a1, %b1 : (!v, !v) -> !v
  return %s : !v
}

// A buffer sized by values read at run time has no bound to plan it at:
// offset -1, placed per run after the arena by the loader; the others are
// planned as usual.
// CHECK-LABEL: func.func @sized_at_run_time
// CHECK: exec.step{{.*}}offsets = array<i64: 0>
// CHECK: kiln.relu
// CHECK: exec.step{{.*}}offsets = array<i64: -1>
// CHECK: kiln.reshape
func.func @sized_at_run_time(%x: tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>,
                             %s: tensor<2xi64, #kiln.enc<row_major, cpu>>)
    -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
    attributes {kiln.symbols = [{name = "a", min = 0, max = 24, opt = 1, code = array<i64: 12, 1, 0>},
                                {name = "b", min = 0, max = 24, opt = 1, code = array<i64: 12, 1, 1>}]} {
  %0 = kiln.relu %x : (tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
  %1 = kiln.reshape %0 {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, s1)>, checked_at_run_time} : (tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  return %1 : tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
}

// -----

// ERROR: error: 'exec.step' op waits for event 3, which no earlier step signals
func.func @dangling_wait(%x: tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>> {
  %0 = exec.step(%x) {stream = 1 : i64, waits = array<i64: 3>} : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>> {
  ^bb0(%a: tensor<4xf32, #kiln.enc<row_major, cpu>>):
    %r = kiln.exp %a : (tensor<4xf32, #kiln.enc<row_major, cpu>>) -> tensor<4xf32, #kiln.enc<row_major, cpu>>
    exec.yield %r : tensor<4xf32, #kiln.enc<row_major, cpu>>
  }
  return %0 : tensor<4xf32, #kiln.enc<row_major, cpu>>
}
