// RUN: kiln-opt %s -split-input-file -kiln-constant-fold=report=true -verify-diagnostics | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-constant-fold="budget-bytes=200" 2>&1 | FileCheck %s --check-prefix=BYTES
// RUN: kiln-opt %s -split-input-file -kiln-constant-fold="budget-seconds=0" 2>&1 | FileCheck %s --check-prefix=TIME

// A huge splat operand would take 800 GB as the reference evaluator's
// doubles: it is over any budget, and says so; it runs with the model.
// CHECK-LABEL: func.func @huge_splat_operand
// CHECK: kiln.reduce_sum
// expected-remark @+1 {{constant folding: 0 ops into 0 bytes of constants in 0.00 s (budget 60 s and 4294967296 bytes); 1 left over budget}}
func.func @huge_splat_operand() -> tensor<f32, #kiln.enc<row_major, cpu>> {
  %w = kiln.weight "w" = dense<0.5> : tensor<100000x100000xf32> : tensor<100000x100000xf32, #kiln.enc<row_major, cpu>>
  // expected-warning @+1 {{computes from weights and constants alone but is not folded: the folding budget (60 s, 4294967296 bytes) is spent; it runs every time the model does}}
  %0 = kiln.reduce_sum %w {axes = array<i64: 0, 1>} : (tensor<100000x100000xf32, #kiln.enc<row_major, cpu>>) -> tensor<f32, #kiln.enc<row_major, cpu>>
  return %0 : tensor<f32, #kiln.enc<row_major, cpu>>
}

// -----

// Within the budget, the report says what was folded. A budget of 200
// bytes holds the first fold (48 bytes of result, 192 of evaluation as
// doubles) but not the second's evaluation; with no time, nothing is folded.
!v = tensor<12xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @budget
// CHECK-NOT: kiln.neg
// CHECK-NOT: kiln.abs
// (The warnings come first, on stderr.)
// BYTES: warning: computes from weights and constants alone but is not folded: the folding budget (60 s, 200 bytes) is spent
// BYTES: func.func @budget
// BYTES-NOT: kiln.neg
// BYTES: kiln.abs
// TIME: warning: computes from weights and constants alone but is not folded: the folding budget (0 s,
// TIME: func.func @budget
// TIME: kiln.neg
// expected-remark @+1 {{constant folding: 2 ops into 96 bytes of constants in}}
func.func @budget() -> !v {
  %w = kiln.weight "w" = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]> : tensor<12xf32> : !v
  %0 = kiln.neg %w : (!v) -> !v
  %1 = kiln.abs %0 : (!v) -> !v
  return %1 : !v
}

// -----

// Must not fold: a cast kiln-quantized-weights keeps for the GEMM's loads
// (and so neither the scaling that reads it).
!q = tensor<8x4xi8, #kiln.enc<row_major, cpu>>
!f = tensor<8x4xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @kept_quantized
// CHECK: kiln.cast %{{.*}} {kiln.dequantize_in_gemm, to = f32}
// CHECK: kiln.mul
func.func @kept_quantized() -> !f {
  %w = kiln.weight "w" = dense<3> : tensor<8x4xi8> : !q
  %s = kiln.constant dense<0.5> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %0 = kiln.cast %w {kiln.dequantize_in_gemm, to = f32} : (!q) -> !f
  %1 = kiln.mul %0, %s : (!f, tensor<f32, #kiln.enc<row_major, cpu>>) -> !f
  return %1 : !f
}
