// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s -mlir-print-op-generic | kiln-opt | FileCheck %s

// kiln.fusion parses, verifies and prints with its kind and body.

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!v = tensor<8xf32, #kiln.enc<row_major, cpu>>

// CHECK-LABEL: func.func @loop
// CHECK: %[[R:.*]] = kiln.fusion loop(%{{.*}}, %{{.*}}) : (tensor<4x8xf32, #kiln.enc<row_major, cpu>>, tensor<8xf32, #kiln.enc<row_major, cpu>>) -> tensor<4x8xf32, #kiln.enc<row_major, cpu>> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32, #kiln.enc<row_major, cpu>>, %[[B:.*]]: tensor<8xf32, #kiln.enc<row_major, cpu>>):
// CHECK-NEXT:   %[[S:.*]] = kiln.add %[[A]], %[[B]]
// CHECK-NEXT:   %[[Y:.*]] = kiln.relu %[[S]]
// CHECK-NEXT:   kiln.yield %[[Y]] : tensor<4x8xf32, #kiln.enc<row_major, cpu>>
// CHECK: return %[[R]]
func.func @loop(%x: !t, %b: !v) -> !t {
  %r = kiln.fusion loop (%x, %b) : (!t, !v) -> !t {
  ^bb0(%a: !t, %c: !v):
    %0 = kiln.add %a, %c : (!t, !v) -> !t
    %1 = kiln.relu %0 : (!t) -> !t
    kiln.yield %1 : !t
  }
  return %r : !t
}

// CHECK-LABEL: func.func @kinds
// CHECK: kiln.fusion reduction
// CHECK: kiln.fusion matmul_epilogue
// CHECK: kiln.fusion conv_epilogue
// CHECK: kiln.fusion horizontal
// CHECK: kiln.fusion attention
func.func @kinds(%x: !t) -> (!t, !t, !t, !t, !t, !t) {
  %0 = kiln.fusion reduction (%x) : (!t) -> !t {
  ^bb0(%a: !t):
    %s = kiln.softmax %a {axis = 1 : i64} : (!t) -> !t
    kiln.yield %s : !t
  }
  %1 = kiln.fusion matmul_epilogue (%x) : (!t) -> !t {
  ^bb0(%a: !t):
    kiln.yield %a : !t
  }
  %2 = kiln.fusion conv_epilogue (%x) : (!t) -> !t {
  ^bb0(%a: !t):
    kiln.yield %a : !t
  }
  // Several results.
  %3:2 = kiln.fusion horizontal (%x) : (!t) -> (!t, !t) {
  ^bb0(%a: !t):
    %n = kiln.neg %a : (!t) -> !t
    %e = kiln.exp %a : (!t) -> !t
    kiln.yield %n, %e : !t, !t
  }
  %4 = kiln.fusion attention (%x) : (!t) -> !t {
  ^bb0(%a: !t):
    %c = kiln.constant dense<0.5> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
    %m = kiln.mul %a, %c : (!t, tensor<f32, #kiln.enc<row_major, cpu>>) -> !t
    kiln.yield %m : !t
  }
  return %0, %1, %2, %3#0, %3#1, %4 : !t, !t, !t, !t, !t, !t
}
