// RUN: kiln-opt %s -split-input-file -kiln-fuse-attention=report=true -verify-diagnostics | FileCheck %s

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>
!f = tensor<f32, #kiln.enc<row_major, cpu>>

// softmax(q k^T * scale) v, no mask: q, k and v are the inputs and the
// scale is cloned in.
// CHECK-LABEL: func.func @without_mask
// CHECK: %[[R:.*]] = kiln.fusion attention(%arg0, %arg1, %arg2)
// CHECK-NEXT: ^bb0(%[[Q:.*]]: {{.*}}, %[[K:.*]]: {{.*}}, %[[V:.*]]: {{.*}}):
// CHECK-NEXT: %[[S:.*]] = kiln.matmul %[[Q]], %[[K]] {transpose_b = true}
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<1.250000e-01>
// CHECK-NEXT: %[[SC:.*]] = kiln.mul %[[S]], %[[C]]
// CHECK-NEXT: %[[P:.*]] = kiln.softmax %[[SC]]
// CHECK-NEXT: %[[O:.*]] = kiln.matmul %[[P]], %[[V]]
// CHECK-NEXT: kiln.yield %[[O]]
// CHECK: return %[[R]]
func.func @without_mask(%q: !q, %k: !q, %v: !q) -> !q {
  %c = kiln.constant dense<0.125> : tensor<f32> : !f
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  %1 = kiln.mul %0, %c : (!s, !f) -> !s
  %2 = kiln.softmax %1 {axis = 2 : i64} : (!s) -> !s
  // expected-remark @+1 {{attention region without mask: matmul, mul, softmax, matmul}}
  %3 = kiln.matmul %2, %v : (!s, !q) -> !q
  return %3 : !q
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>
!m = tensor<16x16xf32, #kiln.enc<row_major, cpu>>
!f = tensor<f32, #kiln.enc<row_major, cpu>>

// With an additive mask (after the scale): the mask is a fourth input.
// CHECK-LABEL: func.func @additive_mask
// CHECK: kiln.fusion attention(%arg0, %arg1, %arg3, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.constant
// CHECK-NEXT: kiln.div
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.softmax
// CHECK-NEXT: kiln.matmul
func.func @additive_mask(%q: !q, %k: !q, %v: !q, %mask: !m) -> !q {
  %c = kiln.constant dense<5.656854> : tensor<f32> : !f
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  %1 = kiln.div %0, %c : (!s, !f) -> !s
  %2 = kiln.add %mask, %1 : (!m, !s) -> !s
  %3 = kiln.softmax %2 {axis = 2 : i64} : (!s) -> !s
  // expected-remark @+1 {{attention region with mask: matmul, div, add, softmax, matmul}}
  %4 = kiln.matmul %3, %v : (!s, !q) -> !q
  return %4 : !q
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>
!b = tensor<16x16xi1, #kiln.enc<row_major, cpu>>
!f = tensor<f32, #kiln.enc<row_major, cpu>>

// A boolean mask through select (ONNX Where), no scale.
// CHECK-LABEL: func.func @select_mask
// CHECK: kiln.fusion attention
// CHECK: kiln.select
// CHECK: kiln.softmax
func.func @select_mask(%q: !q, %k: !q, %v: !q, %keep: !b) -> !q {
  %ninf = kiln.constant dense<-1.0e9> : tensor<f32> : !f
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  %1 = kiln.select %keep, %0, %ninf : (!b, !s, !f) -> !s
  %2 = kiln.softmax %1 {axis = 2 : i64} : (!s) -> !s
  // expected-remark @+1 {{attention region with mask: matmul, select, softmax, matmul}}
  %3 = kiln.matmul %2, %v : (!s, !q) -> !q
  return %3 : !q
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>
!w = tensor<1xf32, #kiln.enc<row_major, cpu>>
!w2 = tensor<2x1x1xf32, #kiln.enc<row_major, cpu>>

// An ONNX exporter's scalar initializer as the scale (a one-element
// weight): attention, with the weight as an input of the region.
// CHECK-LABEL: func.func @scale_by_scalar_weight
// CHECK: %[[W:.*]] = kiln.weight "scale"
// CHECK: kiln.fusion attention(%arg0, %arg1, %[[W]], %arg2)
func.func @scale_by_scalar_weight(%q: !q, %k: !q, %v: !q) -> !q {
  %w = kiln.weight "scale" = dense<0.125> : tensor<1xf32> : !w
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  %1 = kiln.mul %0, %w : (!s, !w) -> !s
  %2 = kiln.softmax %1 {axis = 2 : i64} : (!s) -> !s
  // expected-remark @+1 {{attention region without mask: matmul, mul, softmax, matmul}}
  %3 = kiln.matmul %2, %v : (!s, !q) -> !q
  return %3 : !q
}

// A weight of two elements (one factor per batch) is not a scale: not
// attention.
// CHECK-LABEL: func.func @scale_by_weight_per_batch
// CHECK-NOT: kiln.fusion
func.func @scale_by_weight_per_batch(%q: !q, %k: !q, %v: !q) -> !q {
  %w = kiln.weight "scales" = dense<[[[0.125]], [[0.25]]]> : tensor<2x1x1xf32> : !w2
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  %1 = kiln.mul %0, %w : (!s, !w2) -> !s
  // expected-remark @+1 {{attention fusion: not an attention pattern: 'mul' between the score matmul and the softmax is neither a scale by a constant nor a mask}}
  %2 = kiln.softmax %1 {axis = 2 : i64} : (!s) -> !s
  %3 = kiln.matmul %2, %v : (!s, !q) -> !q
  return %3 : !q
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>
!m = tensor<2x1x16xf32, #kiln.enc<row_major, cpu>>
!b = tensor<2x1x16xi1, #kiln.enc<row_major, cpu>>
!f = tensor<f32, #kiln.enc<row_major, cpu>>

// PyTorch's masked_fill as exported: Where(Equal(mask, 0), -inf, scores /
// sqrt(d)). The scores are select's third operand; the comparison stays
// outside (its result is an input of the region).
// CHECK-LABEL: func.func @masked_fill
// CHECK: %[[DROP:.*]] = kiln.eq
// CHECK: kiln.fusion attention(%arg0, %arg1, %[[DROP]], %arg2)
// CHECK: kiln.div
// CHECK-NEXT: kiln.constant dense<0xFF800000>
// CHECK-NEXT: kiln.select
// CHECK-NEXT: kiln.softmax
func.func @masked_fill(%q: !q, %k: !q, %v: !q, %mask: !m) -> !q {
  %zero = kiln.constant dense<0.0> : tensor<f32> : !f
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32> : !f
  %d = kiln.constant dense<5.656854> : tensor<f32> : !f
  %drop = kiln.eq %mask, %zero : (!m, !f) -> !b
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  %1 = kiln.div %0, %d : (!s, !f) -> !s
  %2 = kiln.select %drop, %ninf, %1 : (!b, !f, !s) -> !s
  %3 = kiln.softmax %2 {axis = 2 : i64} : (!s) -> !s
  // expected-remark @+1 {{attention region with mask: matmul, div, select, softmax, matmul}}
  %4 = kiln.matmul %3, %v : (!s, !q) -> !q
  return %4 : !q
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>
!b = tensor<2x16x16xi1, #kiln.enc<row_major, cpu>>

// A select between two values neither of which is the scores: not
// attention.
// CHECK-LABEL: func.func @select_of_other_values
// CHECK-NOT: kiln.fusion
func.func @select_of_other_values(%q: !q, %k: !q, %v: !q, %c: !b, %a: !s, %b2: !s) -> !q {
  %0 = kiln.select %c, %a, %b2 : (!b, !s, !s) -> !s
  // expected-remark @+1 {{attention fusion: not an attention pattern: the softmax input is not computed by a matmul}}
  %1 = kiln.softmax %0 {axis = 2 : i64} : (!s) -> !s
  %2 = kiln.matmul %1, %v : (!s, !q) -> !q
  return %2 : !q
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>

// The probabilities are a model output too: no region (a fused kernel
// never writes them).
// CHECK-LABEL: func.func @probabilities_used
// CHECK-NOT: kiln.fusion
func.func @probabilities_used(%q: !q, %k: !q, %v: !q) -> (!q, !s) {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  // expected-remark @+1 {{attention fusion: not an attention pattern: the probabilities have other users}}
  %1 = kiln.softmax %0 {axis = 2 : i64} : (!s) -> !s
  %2 = kiln.matmul %1, %v : (!s, !q) -> !q
  return %2, %1 : !q, !s
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>

// Softmax over the queries (axis 1), not the keys: not attention.
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT: kiln.fusion
func.func @wrong_axis(%q: !q, %k: !q, %v: !q) -> !q {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  // expected-remark @+1 {{attention fusion: not an attention pattern: the softmax is not over the last axis (the keys)}}
  %1 = kiln.softmax %0 {axis = 1 : i64} : (!s) -> !s
  %2 = kiln.matmul %1, %v : (!s, !q) -> !q
  return %2 : !q
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>

// A scale by a tensor (not a constant) is not part of the pattern.
// CHECK-LABEL: func.func @scale_by_tensor
// CHECK-NOT: kiln.fusion
func.func @scale_by_tensor(%q: !q, %k: !q, %v: !q, %t: !s) -> !q {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  %1 = kiln.mul %0, %t : (!s, !s) -> !s
  // expected-remark @+1 {{attention fusion: not an attention pattern: 'mul' between the score matmul and the softmax is neither a scale by a constant nor a mask}}
  %2 = kiln.softmax %1 {axis = 2 : i64} : (!s) -> !s
  %3 = kiln.matmul %2, %v : (!s, !q) -> !q
  return %3 : !q
}

// -----

!q = tensor<2x16x32xf32, #kiln.enc<row_major, cpu>>
!s = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>

// The scores are also returned: they have other users.
// CHECK-LABEL: func.func @scores_used
// CHECK-NOT: kiln.fusion
func.func @scores_used(%q: !q, %k: !q, %v: !q) -> (!q, !s) {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!q, !q) -> !s
  // expected-remark @+1 {{attention fusion: not an attention pattern: the softmax input ('matmul') has other users}}
  %1 = kiln.softmax %0 {axis = 2 : i64} : (!s) -> !s
  %2 = kiln.matmul %1, %v : (!s, !q) -> !q
  return %2, %0 : !q, !s
}

// -----

// Over symbolic sizes (b sequences of s tokens): fused on the host, whose
// kernels take any size, and on a GPU, whose attention kernel takes the
// batch and the query and key counts as arguments. Head dimensions known
// only at run time (they size the kernel's tiles) keep it unfused on a GPU.
!hq = tensor<?x?x32xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
!hs = tensor<?x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>
!gq = tensor<?x?x32xf32, #kiln.enc<row_major, cuda:0, [s0, s1]>>
!gs = tensor<?x?x?xf32, #kiln.enc<row_major, cuda:0, [s0, s1, s1]>>
!gd = tensor<2x16x?xf32, #kiln.enc<row_major, cuda:0, [s0]>>
!gds = tensor<2x16x16xf32, #kiln.enc<row_major, cuda:0>>
// CHECK-LABEL: func.func @symbolic_on_host
// CHECK: kiln.fusion attention
func.func @symbolic_on_host(%q: !hq, %k: !hq, %v: !hq) -> !hq
    attributes {kiln.symbols = [{name = "b", min = 1, max = 4, opt = 2}, {name = "s", min = 1, max = 64, opt = 16}]} {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!hq, !hq) -> !hs
  %1 = kiln.softmax %0 {axis = 2 : i64} : (!hs) -> !hs
  // expected-remark @+1 {{attention region without mask: matmul, softmax, matmul}}
  %2 = kiln.matmul %1, %v : (!hs, !hq) -> !hq
  return %2 : !hq
}
// CHECK-LABEL: func.func @symbolic_on_gpu
// CHECK: kiln.fusion attention
func.func @symbolic_on_gpu(%q: !gq, %k: !gq, %v: !gq) -> !gq
    attributes {kiln.symbols = [{name = "b", min = 1, max = 4, opt = 2}, {name = "s", min = 1, max = 64, opt = 16}]} {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!gq, !gq) -> !gs
  %1 = kiln.softmax %0 {axis = 2 : i64} : (!gs) -> !gs
  // expected-remark @+1 {{attention region without mask: matmul, softmax, matmul}}
  %2 = kiln.matmul %1, %v : (!gs, !gq) -> !gq
  return %2 : !gq
}
// CHECK-LABEL: func.func @symbolic_head_dim_on_gpu
// CHECK-NOT: kiln.fusion
// CHECK: kiln.softmax
func.func @symbolic_head_dim_on_gpu(%q: !gd, %k: !gd, %v: !gd) -> !gd
    attributes {kiln.symbols = [{name = "d", min = 8, max = 64, opt = 32}]} {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!gd, !gd) -> !gds
  // expected-remark @+1 {{attention fusion: not an attention pattern: its head dimensions are known only at run time, and the GPU's attention kernel takes them as constants}}
  %1 = kiln.softmax %0 {axis = 2 : i64} : (!gds) -> !gds
  %2 = kiln.matmul %1, %v : (!gds, !gd) -> !gd
  return %2 : !gd
}

// -----

// Head dimensions of 256 on a GPU: the attention kernel's tiles would not
// fit a block's shared memory, so the pattern stays unfused there (its
// matmuls and softmax have device code); on the host it fuses.
!wq = tensor<2x16x256xf32, #kiln.enc<row_major, cuda:0>>
!ws = tensor<2x16x16xf32, #kiln.enc<row_major, cuda:0>>
!hwq = tensor<2x16x256xf32, #kiln.enc<row_major, cpu>>
!hws = tensor<2x16x16xf32, #kiln.enc<row_major, cpu>>
// CHECK-LABEL: func.func @wide_heads_on_gpu
// CHECK-NOT: kiln.fusion
// CHECK: kiln.softmax
func.func @wide_heads_on_gpu(%q: !wq, %k: !wq, %v: !wq) -> !wq {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!wq, !wq) -> !ws
  // expected-remark @+1 {{attention fusion: not an attention pattern: head dimensions 256 and 256 need more shared memory than the GPU's attention kernel has}}
  %1 = kiln.softmax %0 {axis = 2 : i64} : (!ws) -> !ws
  %2 = kiln.matmul %1, %v : (!ws, !wq) -> !wq
  return %2 : !wq
}
// CHECK-LABEL: func.func @wide_heads_on_host
// CHECK: kiln.fusion attention
func.func @wide_heads_on_host(%q: !hwq, %k: !hwq, %v: !hwq) -> !hwq {
  %0 = kiln.matmul %q, %k {transpose_b = true} : (!hwq, !hwq) -> !hws
  %1 = kiln.softmax %0 {axis = 2 : i64} : (!hws) -> !hws
  // expected-remark @+1 {{attention region without mask: matmul, softmax, matmul}}
  %2 = kiln.matmul %1, %v : (!hws, !hwq) -> !hwq
  return %2 : !hwq
}
