// RUN: kiln-opt %s -kiln-form-steps -kiln-assign-streams | FileCheck %s
// RUN: kiln-opt %s -kiln-form-steps -kiln-assign-streams=max-streams=1 | FileCheck %s --check-prefix=SERIAL
// RUN: kiln-opt %s -kiln-form-steps -kiln-assign-streams=max-streams=2 | FileCheck %s --check-prefix=TWO

!v = tensor<4xf32, #kiln.enc<row_major, cpu>>

// A chain stays on one stream and needs no event.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: attributes {exec.streams = 1 : i64}
// CHECK: exec.step(%arg0) {stream = 0 : i64}
// CHECK: exec.step(%{{.*}}) {stream = 0 : i64}
// CHECK-NOT: event
// CHECK-NOT: waits
func.func @chain(%x: !v) -> !v {
  %0 = kiln.exp %x : (!v) -> !v
  %1 = kiln.relu %0 : (!v) -> !v
  return %1 : !v
}

// Three independent branches run on three streams; the join waits for the
// two branches that are not on its own stream.
// CHECK-LABEL: func.func @branches
// CHECK-SAME: attributes {exec.streams = 3 : i64}
// CHECK: %[[A:.*]] = exec.step(%arg0) {stream = 0 : i64}
// CHECK: %[[B:.*]] = exec.step(%arg0) {event = 0 : i64, stream = 1 : i64}
// CHECK: %[[C:.*]] = exec.step(%arg0) {event = 1 : i64, stream = 2 : i64}
// CHECK: %[[AB:.*]] = exec.step(%[[A]], %[[B]]) {stream = 0 : i64, waits = array<i64: 0>}
// CHECK: exec.step(%[[AB]], %[[C]]) {stream = 0 : i64, waits = array<i64: 1>}
// SERIAL-LABEL: func.func @branches
// SERIAL-SAME: attributes {exec.streams = 1 : i64}
// SERIAL-NOT: stream = 1
// SERIAL-NOT: waits
// With two streams the third branch joins the least loaded stream (the
// first of equals), and the joins continue whichever stream they can.
// TWO-LABEL: func.func @branches
// TWO: %[[A:.*]] = exec.step(%arg0) {event = 0 : i64, stream = 0 : i64}
// TWO: %[[B:.*]] = exec.step(%arg0) {stream = 1 : i64}
// TWO: %[[C:.*]] = exec.step(%arg0) {event = 1 : i64, stream = 0 : i64}
// TWO: %[[AB:.*]] = exec.step(%[[A]], %[[B]]) {stream = 1 : i64, waits = array<i64: 0>}
// TWO: exec.step(%[[AB]], %[[C]]) {stream = 1 : i64, waits = array<i64: 1>}
func.func @branches(%x: !v) -> !v {
  %a = kiln.exp %x : (!v) -> !v
  %b = kiln.tanh %x : (!v) -> !v
  %c = kiln.relu %x : (!v) -> !v
  %ab = kiln.add %a, %b : (!v, !v) -> !v
  %abc = kiln.add %ab, %c : (!v, !v) -> !v
  return %abc : !v
}

// A wait covers everything before the signalling step on its stream: the
// second use of stream 1's results needs no second wait.
// CHECK-LABEL: func.func @covered_wait
// CHECK: %[[P:.*]] = exec.step(%arg0) {stream = 0 : i64}
// CHECK: %[[Q1:.*]] = exec.step(%arg0) {stream = 1 : i64}
// CHECK: %[[Q2:.*]] = exec.step(%[[Q1]]) {event = 0 : i64, stream = 1 : i64}
// CHECK: %[[R:.*]] = exec.step(%[[P]], %[[Q2]]) {stream = 0 : i64, waits = array<i64: 0>}
// CHECK: exec.step(%[[R]], %[[Q1]]) {stream = 0 : i64}
func.func @covered_wait(%x: !v) -> !v {
  %p = kiln.exp %x : (!v) -> !v
  %q1 = kiln.tanh %x : (!v) -> !v
  %q2 = kiln.relu %q1 : (!v) -> !v
  %r = kiln.add %p, %q2 : (!v, !v) -> !v
  %s = kiln.add %r, %q1 : (!v, !v) -> !v
  return %s : !v
}
