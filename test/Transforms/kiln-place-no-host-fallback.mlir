// RUN: kiln-opt %s -split-input-file -kiln-place="no-host-fallback=1 host-ops=argsort" -verify-diagnostics | FileCheck %s

// Every op that would stay on the host is an error at its location, all of
// them (the whole list at once), and nothing is placed.
!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!t = tensor<4x8xi64, #kiln.enc<row_major, cpu>>
func.func @refused(%x: !c) -> (!t, !t) {
  %0 = kiln.exp %x : (!c) -> !c
  // expected-error @+1 {{'kiln.argsort' would run on the host, which --no-host-fallback refuses: --host-ops keeps it there}}
  %1 = kiln.argsort %0 {axis = 0 : i64} : (!c) -> !t
  // expected-error @+1 {{'kiln.argsort' would run on the host, which --no-host-fallback refuses: --host-ops keeps it there}}
  %2 = kiln.argsort %x {axis = 1 : i64, descending = true} : (!c) -> !t
  // The cost model is off: a small op after a host op is not refused.
  %3 = kiln.add %2, %2 : (!t, !t) -> !t
  return %1, %3 : !t, !t
}

// -----

// Must not fire: a model whose every op has device code is placed as
// without the option.
!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!w = tensor<8x8xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @all_on_device
// CHECK: kiln.matmul {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.relu {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.transfer {{.*}} {to = "cpu"}
func.func @all_on_device(%x: !c) -> !c {
  %w = kiln.weight "w" = dense<0.5> : tensor<8x8xf32> : !w
  %m = kiln.matmul %x, %w : (!c, !w) -> !c
  %r = kiln.relu %m : (!c) -> !c
  return %r : !c
}
