// kiln-select-impl over symbolic sizes: cuBLASLt and cuDNN take their
// sizes per run, so a matmul or convolution they can compute is theirs
// whatever the cost model would say (kiln's kernels take sizes as
// constants so far), its symbolic sizes in the descriptor's `symbolic`
// dictionary (the numbers 0) and the workspace planned for the largest
// sizes. A step they cannot compute stays "generated": it has no kernel
// over symbolic sizes yet and runs on the host.
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl -kiln-assign-streams -kiln-assign-buffers | kiln-opt -split-input-file | FileCheck %s --check-prefix=ROUNDTRIP

// Attention's scores, [b, 4, s, 16] x [b, 4, s, 16]^T: batch b * 4, m and n
// the sequence, every stride a multiple of it. Row-major X * Y^T is the
// column-major call D = op(Y') * X' (A is the keys, transposed).
// CHECK: #[[BATCH:map[0-9]*]] = affine_map<()[s0] -> (s0 * 4)>
// CHECK: #[[SEQ:map[0-9]*]] = affine_map<()[s0, s1] -> (s1)>
// CHECK: #[[STRIDE:map[0-9]*]] = affine_map<()[s0, s1] -> (s1 * 16)>
// CHECK: #[[SQUARE:map[0-9]*]] = affine_map<()[s0, s1] -> (s1 * s1)>
// CHECK-LABEL: func.func @scores
// CHECK: gemm = {a = 1 : i64, {{.*}}batch = 0 : i64, {{.*}}k = 16 : i64, lda = 16 : i64, ldb = 16 : i64, ldc = 0 : i64, m = 0 : i64, n = 0 : i64, stride_a = 0 : i64, stride_b = 0 : i64, stride_c = 0 : i64,
// CHECK-SAME: symbolic = {batch = #[[BATCH]], ldc = #[[SEQ]], m = #[[SEQ]], n = #[[SEQ]], stride_a = #[[STRIDE]], stride_b = #[[STRIDE]], stride_c = #[[SQUARE]]}, trans_a = true
// CHECK-SAME: impl = "cublaslt", impl_reason = "its sizes are known only at run time, and the library picks its algorithm per run
// The descriptor survives printing and parsing.
// ROUNDTRIP-LABEL: func.func @scores
// ROUNDTRIP: symbolic = {batch = #map
!q = tensor<?x4x?x16xf32, #kiln.enc<row_major, cuda:0, [s0, s1]>>
!s = tensor<?x4x?x?xf32, #kiln.enc<row_major, cuda:0, [s0, s1, s1]>>
func.func @scores(%q: !q, %k: !q) -> !s
    attributes {kiln.symbols = [{name = "b", min = 1, max = 8, opt = 2}, {name = "s", min = 1, max = 128, opt = 64}]} {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  return %0 : !s
}

// -----

// A feed-forward matmul with bias over b * s rows: only n (the rows) is
// symbolic.
// CHECK: #[[ROWS:map[0-9]*]] = affine_map<()[s0] -> (s0)>
// CHECK-LABEL: func.func @bias
// CHECK: gemm = {{{.*}}batch = 1 : i64, {{.*}}epilogue = "bias", k = 64 : i64, lda = 32 : i64, ldb = 64 : i64, ldc = 32 : i64, m = 32 : i64, n = 0 : i64,
// CHECK-SAME: symbolic = {n = #[[ROWS]]}
// CHECK-SAME: impl = "cublaslt"
!x = tensor<?x64xf32, #kiln.enc<row_major, cuda:0, [s0]>>
!w = tensor<64x32xf32, #kiln.enc<row_major, cuda:0>>
!b = tensor<32xf32, #kiln.enc<row_major, cuda:0>>
!y = tensor<?x32xf32, #kiln.enc<row_major, cuda:0, [s0]>>
func.func @bias(%x: !x, %w: !w, %b: !b) -> !y
    attributes {kiln.symbols = [{name = "rows", min = 1, max = 1024, opt = 128}]} {
  %0 = kiln.fusion matmul_epilogue (%x, %w, %b) : (!x, !w, !b) -> !y {
  ^bb0(%a: !x, %c: !w, %d: !b):
    %1 = kiln.matmul %a, %c : (!x, !w) -> !y
    %2 = kiln.add %1, %d : (!y, !b) -> !y
    kiln.yield %2 : !y
  }
  return %0 : !y
}

// -----

// The same with GELU, which cuBLASLt's epilogues lack: generated, saying why.
// CHECK-LABEL: func.func @gelu
// CHECK-NOT: gemm =
// CHECK: impl = "generated", impl_reason = "not one cuBLASLt call: 'kiln.gelu' has no cuBLASLt epilogue"
!x = tensor<?x64xf32, #kiln.enc<row_major, cuda:0, [s0]>>
!w = tensor<64x32xf32, #kiln.enc<row_major, cuda:0>>
!y = tensor<?x32xf32, #kiln.enc<row_major, cuda:0, [s0]>>
func.func @gelu(%x: !x, %w: !w) -> !y
    attributes {kiln.symbols = [{name = "rows", min = 1, max = 1024, opt = 128}]} {
  %0 = kiln.fusion matmul_epilogue (%x, %w) : (!x, !w) -> !y {
  ^bb0(%a: !x, %c: !w):
    %1 = kiln.matmul %a, %c : (!x, !w) -> !y
    %2 = kiln.gelu %1 : (!y) -> !y
    kiln.yield %2 : !y
  }
  return %0 : !y
}

// -----

// A convolution over a symbolic batch: cuDNN, the batch per run (the
// descriptor's input and output arrays hold 0 there).
// CHECK: #[[N:map[0-9]*]] = affine_map<()[s0] -> (s0)>
// CHECK-LABEL: func.func @conv
// CHECK: conv = {{{.*}}input = array<i64: 0, 3, 8, 8>, {{.*}}output = array<i64: 0, 4, 8, 8>, {{.*}}symbolic = {n = #[[N]]}
// CHECK-SAME: impl = "cudnn", impl_reason = "its sizes are known only at run time
!ci = tensor<?x3x8x8xf32, #kiln.enc<row_major, cuda:0, [s0]>>
!cf = tensor<4x3x3x3xf32, #kiln.enc<row_major, cuda:0>>
!co = tensor<?x4x8x8xf32, #kiln.enc<row_major, cuda:0, [s0]>>
func.func @conv(%x: !ci, %f: !cf) -> !co
    attributes {kiln.symbols = [{name = "n", min = 1, max = 8, opt = 4}]} {
  %0 = kiln.conv2d %x, %f {padding = array<i64: 1, 1, 1, 1>} : (!ci, !cf) -> !co
  return %0 : !co
}
