// RUN: kiln-opt %s --kiln-place 2>&1 | FileCheck %s

// A length that follows computed data is read between steps, on the host:
// the take_prefix binding it and the ops it sizes stay there, one note per
// model location and reason (the two ops share the node's location).
// CHECK: runs on the host: its sizes follow computed data (a length read when the model runs), which device code does not take so far
// CHECK-NOT: warning:
// CHECK-LABEL: func.func @length_follows_data
// CHECK: kiln.take_prefix {{.*}} -> tensor<?xf32, #kiln.enc<row_major, cpu, [s0]>>
// CHECK: kiln.exp {{.*}} -> tensor<?xf32, #kiln.enc<row_major, cpu, [s0]>>
!v = tensor<30xf32, #kiln.enc<row_major, cpu>>
!n = tensor<i64, #kiln.enc<row_major, cpu>>
!kept = tensor<?xf32, #kiln.enc<row_major, cpu, [s0]>>
func.func @length_follows_data(%x: !v, %count: !n) -> !kept
    attributes {kiln.symbols = [{name = "kept", min = 0, max = 30, opt = 30, bound}]} {
  %0 = kiln.take_prefix %x, %count {axis = 0 : i64, length = affine_map<()[s0] -> (s0)>} : (!v, !n) -> !kept loc("node")
  %1 = kiln.exp %0 : (!kept) -> !kept loc("node")
  return %1 : !kept
}
