// RUN: kiln-opt %s -split-input-file -kiln-quantized-weights=report=true -verify-diagnostics | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-quantized-weights="in-gemm=true min-bytes=64" | FileCheck %s --check-prefix=GEMM

// A weight-only quantised embedding table (int8, one scale per column) read
// by a gather: the gather reads int8 rows and dequantises only those.
!q = tensor<10x4xi8, #kiln.enc<row_major, cpu>>
!f = tensor<10x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<1x4xf32, #kiln.enc<row_major, cpu>>
!ids = tensor<2x3xi64, #kiln.enc<row_major, cpu>>
!r = tensor<2x3x4xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @embedding
// CHECK: %[[W:.*]] = kiln.weight "table"
// CHECK: %[[SCALE:.*]] = kiln.constant dense<{{.*}}> : tensor<4xf32> : tensor<4xf32,
// CHECK: %[[ROWS:.*]] = kiln.gather %[[W]], %arg0 {axis = 0 : i64} : ({{.*}}) -> tensor<2x3x4xi8,
// CHECK: %[[F:.*]] = kiln.cast %[[ROWS]] {to = f32} : {{.*}} -> tensor<2x3x4xf32,
// CHECK: %[[Y:.*]] = kiln.mul %[[F]], %[[SCALE]]
// CHECK: return %[[Y]]
func.func @embedding(%ids: !ids) -> !r {
  %w = kiln.weight "table" = dense<3> : tensor<10x4xi8> : !q
  %s = kiln.constant dense<[[0.5, 0.25, 2.0, 1.0]]> : tensor<1x4xf32> : !s
  %0 = kiln.cast %w {to = f32} : (!q) -> !f
  // expected-remark @+1 {{quantised embedding: gathers rows of the 40-byte integer table and dequantises them, instead of folding 160 bytes of float table}}
  %1 = kiln.mul %0, %s : (!f, !s) -> !f
  %2 = kiln.gather %1, %ids {axis = 0 : i64} : (!f, !ids) -> !r
  return %2 : !r
}

// -----

// Must not fire: a scale per row varies along the gathered axis; and a
// table with another user than a gather. Both are folded as before.
!q = tensor<10x4xi8, #kiln.enc<row_major, cpu>>
!f = tensor<10x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<10x1xf32, #kiln.enc<row_major, cpu>>
!ids = tensor<3xi64, #kiln.enc<row_major, cpu>>
!r = tensor<3x4xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @not_rewritten
// CHECK: %[[D:.*]] = kiln.mul
// CHECK: kiln.gather %[[D]], %arg0
// CHECK: %[[D2:.*]] = kiln.mul
// CHECK: kiln.gather %[[D2]], %arg0
// CHECK: kiln.reduce_sum %[[D2]]
func.func @not_rewritten(%ids: !ids) -> (!r, !r, tensor<f32, #kiln.enc<row_major, cpu>>) {
  %w = kiln.weight "table" = dense<3> : tensor<10x4xi8> : !q
  %s = kiln.constant dense<0.5> : tensor<10x1xf32> : !s
  %0 = kiln.cast %w {to = f32} : (!q) -> !f
  // expected-remark @+1 {{quantised embedding: folded to 160 bytes of float table (40 bytes quantised; its scale varies along the gathered rows)}}
  %1 = kiln.mul %0, %s : (!f, !s) -> !f
  %2 = kiln.gather %1, %ids {axis = 0 : i64} : (!f, !ids) -> !r
  %c = kiln.constant dense<0.5> : tensor<1x4xf32> : tensor<1x4xf32, #kiln.enc<row_major, cpu>>
  %3 = kiln.cast %w {to = f32} : (!q) -> !f
  // expected-remark @+1 {{quantised weight: folded to 160 bytes of float weight (40 bytes quantised; its users are not all gathers or right operands of 2-D float matmuls)}}
  %4 = kiln.mul %3, %c : (!f, tensor<1x4xf32, #kiln.enc<row_major, cpu>>) -> !f
  %5 = kiln.gather %4, %ids {axis = 0 : i64} : (!f, !ids) -> !r
  %6 = kiln.reduce_sum %4 {axes = array<i64: 0, 1>} : (!f) -> tensor<f32, #kiln.enc<row_major, cpu>>
  return %2, %5, %6 : !r, !r, tensor<f32, #kiln.enc<row_major, cpu>>
}

// -----

// A weight-only quantised matmul weight: with in-gemm (a GPU target), one of
// at least min-bytes dequantised keeps int8, its cast marked for the GEMM's
// tile loads; without it, or smaller, it is folded.
!a = tensor<2x8xf32, #kiln.enc<row_major, cpu>>
!q = tensor<8x4xi8, #kiln.enc<row_major, cpu>>
!f = tensor<8x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<4xf32, #kiln.enc<row_major, cpu>>
!r = tensor<2x4xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @matmul_weight
// CHECK-NOT: dequantize_in_gemm
// GEMM-LABEL: func.func @matmul_weight
// GEMM: kiln.cast %{{.*}} {kiln.dequantize_in_gemm, to = f32}
// GEMM: kiln.matmul
func.func @matmul_weight(%x: !a) -> !r {
  %w = kiln.weight "w" = dense<3> : tensor<8x4xi8> : !q
  %s = kiln.constant dense<[0.5, 0.25, 2.0, 1.0]> : tensor<4xf32> : !s
  %0 = kiln.cast %w {to = f32} : (!q) -> !f
  // expected-remark @+1 {{quantised weight: folded to 128 bytes of float weight (32 bytes quantised; the target's matmuls do not dequantise in their loads)}}
  %1 = kiln.mul %0, %s : (!f, !s) -> !f
  %2 = kiln.matmul %x, %1 : (!a, !f) -> !r
  return %2 : !r
}

// -----

// Must not fire in the GEMM either: the weight is the matmul's left operand.
!q = tensor<4x8xi8, #kiln.enc<row_major, cpu>>
!f = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!b = tensor<8x16xf32, #kiln.enc<row_major, cpu>>
!r = tensor<4x16xf32, #kiln.enc<row_major, cpu>>
// GEMM-LABEL: func.func @left_operand
// GEMM-NOT: dequantize_in_gemm
func.func @left_operand(%y: !b) -> !r {
  %w = kiln.weight "w" = dense<3> : tensor<4x8xi8> : !q
  %s = kiln.constant dense<0.5> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %0 = kiln.cast %w {to = f32} : (!q) -> !f
  // expected-remark @+1 {{quantised weight: folded}}
  %1 = kiln.mul %0, %s : (!f, tensor<f32, #kiln.enc<row_major, cpu>>) -> !f
  %2 = kiln.matmul %1, %y : (!f, !b) -> !r
  return %2 : !r
}
