// RUN: kiln-opt %s -kiln-fuse-loops="report=true max-ops=2" -verify-diagnostics | FileCheck %s

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>

// max-ops bounds a region: a chain of three becomes a region of two and a
// lone op.
// CHECK-LABEL: func.func @bounded
// CHECK: kiln.neg %arg0
// CHECK: kiln.fusion loop
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.abs
// CHECK-NEXT: kiln.relu
func.func @bounded(%x: !t) -> !t {
  // expected-remark @+2 {{loop fusion: 'neg' not fused into the region of 'relu': the region would hold 3 ops (max-ops=2)}}
  // expected-remark @+1 {{loop fusion: 'neg' stays a kernel of its own}}
  %0 = kiln.neg %x : (!t) -> !t
  %1 = kiln.abs %0 : (!t) -> !t
  // expected-remark @+1 {{loop region: abs, relu}}
  %2 = kiln.relu %1 : (!t) -> !t
  return %2 : !t
}
