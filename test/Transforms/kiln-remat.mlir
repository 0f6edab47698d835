// RUN: kiln-opt %s -split-input-file -kiln-remat="loss=loss budget=1" | FileCheck %s --check-prefix=ALL
// RUN: kiln-opt %s -split-input-file -kiln-remat="loss=loss budget=0.5" | FileCheck %s --check-prefix=HALF
// RUN: kiln-opt %s -split-input-file -kiln-remat="loss=loss budget=0" | FileCheck %s --check-prefix=NONE
// RUN: kiln-opt %s -split-input-file -mlir-print-op-on-diagnostic=false -kiln-remat="loss=loss budget=0.5 report" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// kiln-remat on functions kiln-grad made (the backward ops written out
// here): the forward ops are those the loss depends on; each forward value
// a backward op reads is saved or recomputed just before its first
// backward reader.

!m = tensor<4x4xf32, #kiln.enc<row_major, cpu>>
!b = tensor<8x4x4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// The backward reads tanh of a broadcast matmul (512 bytes), after making
// a 512-byte value of its own. Budget 1 saves the tanh, alive beside that
// value. Budget 0.5 (at most 256 bytes) saves the matmul's 64 bytes and
// recomputes the broadcast and the tanh after it, which fuse into their
// readers: a lower peak. Budget 0 does the same: recomputing the matmul
// too would save 64 bytes more but not lower the peak, and recomputing
// costs time, so no plan does.
// ALL-LABEL: func.func @matmul_then_broadcast
// ALL-COUNT-1: kiln.tanh
// ALL-NOT: kiln.tanh
// HALF-LABEL: func.func @matmul_then_broadcast
// HALF: %[[MM:.*]] = kiln.matmul %arg0, %w :
// HALF: kiln.exp
// HALF-NEXT: kiln.reduce_sum
// HALF-NEXT: %[[B:.*]] = kiln.broadcast %[[MM]]
// HALF-NEXT: %[[T:.*]] = kiln.tanh %[[B]]
// HALF-NEXT: kiln.mul %[[T]], %[[T]]
// HALF-NOT: kiln.matmul %arg0, %w
// NONE-LABEL: func.func @matmul_then_broadcast
// NONE: %[[MM:.*]] = kiln.matmul %arg0, %w :
// NONE: kiln.exp
// NONE-NEXT: kiln.reduce_sum
// NONE-NEXT: %[[B:.*]] = kiln.broadcast %[[MM]]
// NONE-NEXT: %[[T:.*]] = kiln.tanh %[[B]]
// NONE-NEXT: kiln.mul %[[T]], %[[T]]
// NONE-NOT: kiln.matmul %arg0, %w
// REPORT: remark: kiln-remat: budget 0.5: saves 64 bytes for the backward pass (1 value; 64 at the least, 512 recomputing nothing), recomputes 2 ops (128 FLOPs); estimated peak 644 bytes live (644 to 1092)
// REPORT: remark: kiln-remat: layer '{{.*}}kiln-remat.mlir{{.*}}:45' saves 64 bytes (1 value)
func.func @matmul_then_broadcast(%x: !m {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !m {kiln.name = "grad.w"}) {
  %w = kiln.weight "w" = dense<0.5> : tensor<4x4xf32> : !m
  %m = kiln.matmul %x, %w : (!m, !m) -> !m
  %b = kiln.broadcast %m {shape = array<i64: 8, 4, 4>} : (!m) -> !b
  %t = kiln.tanh %b : (!b) -> !b
  %loss = kiln.reduce_sum %t {axes = array<i64: 0, 1, 2>} : (!b) -> !s
  // The backward pass: first a 512-byte value of its own (alive beside
  // whatever is saved), then 1 - t^2, summed over the broadcast, times x^T.
  %one = kiln.constant dense<1.0> : tensor<f32> : !s
  %xb = kiln.broadcast %x {shape = array<i64: 8, 4, 4>} : (!m) -> !b
  %e = kiln.exp %xb : (!b) -> !b
  %r = kiln.reduce_sum %e {axes = array<i64: 0>} : (!b) -> !m
  %t2 = kiln.mul %t, %t : (!b, !b) -> !b
  %d = kiln.sub %one, %t2 : (!s, !b) -> !b
  %dm = kiln.reduce_sum %d {axes = array<i64: 0>} : (!b) -> !m
  %g = kiln.add %dm, %r : (!m, !m) -> !m
  %dw = kiln.matmul %x, %g {transpose_a = true} : (!m, !m) -> !m
  return %loss, %dw : !s, !m
}

// -----

!m = tensor<4x4xf32, #kiln.enc<row_major, cpu>>
!big = tensor<4x1024xf32, #kiln.enc<row_major, cpu>>
!w = tensor<4x256xf32, #kiln.enc<row_major, cpu>>
!r = tensor<4x1xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// Must not fire at any budget: recomputing the row maxima (16 bytes)
// needs the 16 KiB product again while the backward holds a 4 KiB adjoint,
// a higher peak than saving them; a smaller budget never raises the peak.
// The product, read by forward ops only, is never a question.
// ALL-LABEL: func.func @recompute_would_raise_peak
// HALF-LABEL: func.func @recompute_would_raise_peak
// HALF-COUNT-1: kiln.reduce_max
// HALF-NOT: kiln.reduce_max
// ALL-COUNT-1: kiln.reduce_max
// ALL-NOT: kiln.reduce_max
// NONE-LABEL: func.func @recompute_would_raise_peak
// NONE-COUNT-1: kiln.reduce_max
// NONE-NOT: kiln.reduce_max
// REPORT: remark: kiln-remat: budget 0.5: saves 16 bytes for the backward pass (1 value; 16 at the least, 16 recomputing nothing), recomputes 0 ops (0 FLOPs); estimated peak 16400 bytes live (16400 to 16400)
func.func @recompute_would_raise_peak(%x: !m {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !w {kiln.name = "grad.v"}) {
  %w = kiln.weight "w" = dense<0.5> : tensor<4x1024xf32> : !big
  %v = kiln.weight "v" = dense<0.25> : tensor<4x256xf32> : !w
  %big = kiln.matmul %x, %w : (!m, !big) -> !big
  %row = kiln.reduce_max %big {axes = array<i64: 1>, keepdims = true} : (!big) -> !r
  %loss = kiln.reduce_sum %row {axes = array<i64: 0, 1>} : (!r) -> !s
  %a = kiln.matmul %x, %v {transpose_a = true} : (!m, !w) -> !w
  %g = kiln.broadcast %row {shape = array<i64: 4, 256>} : (!r) -> !w
  %e = kiln.exp %g : (!w) -> !w
  %d = kiln.mul %a, %e : (!w, !w) -> !w
  return %loss, %d : !s, !w
}

// -----

!v = tensor<64xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// A forward value the function returns lives to the end anyway: saving it
// costs nothing, so no budget recomputes it (the exp, which only the
// backward reads besides the loss, is recomputed from it at budget 0).
// ALL-LABEL: func.func @returned_value
// NONE-LABEL: func.func @returned_value
// NONE: %[[T:.*]] = kiln.tanh
// NONE: kiln.reduce_sum
// NONE-NEXT: %[[E:.*]] = kiln.exp %[[T]]
// NONE-NEXT: kiln.mul %[[E]], %[[T]]
// NONE-NOT: kiln.tanh
// REPORT: remark: kiln-remat: budget 0.5: saves 0 bytes for the backward pass (1 value; 0 at the least, 256 recomputing nothing), recomputes 1 op (64 FLOPs)
func.func @returned_value(%x: !v {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !v {kiln.name = "t"}, !v {kiln.name = "grad.w"}) {
  %w = kiln.weight "w" = dense<0.5> : tensor<64xf32> : !v
  %a = kiln.mul %x, %w : (!v, !v) -> !v
  %t = kiln.tanh %a : (!v) -> !v
  %e = kiln.exp %t : (!v) -> !v
  %loss = kiln.reduce_sum %e {axes = array<i64: 0>} : (!v) -> !s
  %d = kiln.mul %e, %t : (!v, !v) -> !v
  return %loss, %t, %d : !s, !v, !v
}
