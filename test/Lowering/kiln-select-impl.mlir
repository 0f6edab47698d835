// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl | FileCheck %s --check-prefixes=CHECK,AUTO
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="impl=library" | FileCheck %s --check-prefixes=CHECK,LIBRARY
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="impl=generated" | FileCheck %s --check-prefix=GENERATED
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="precision=tf32 deterministic=true" | FileCheck %s --check-prefix=TF32
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="workspace-limit=0" -kiln-assign-streams -kiln-assign-buffers | FileCheck %s --check-prefix=NOWS
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl -kiln-assign-streams -kiln-assign-buffers | FileCheck %s --check-prefix=WS
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="arch=80" | FileCheck %s --check-prefix=A100
// RUN: not kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="arch=2147483648" 2>&1 | FileCheck %s --check-prefix=BADARCH
// RUN: not kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="workspace-limit=-7" 2>&1 | FileCheck %s --check-prefix=BADWS
// A tuning cache (what kilnc --autotune measured) overrides the cost model
// for the problems it holds; a malformed one is an error naming its line.
// RUN: printf '# measured\nsm_90 f32 m=3072 n=128 k=768 batch=1 trans=NN epilogue=bias_relu\tcublaslt_us=20.5\tgenerated_us=11.25\n' > %t.tuning
// RUN: kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="tuning-cache=%t.tuning" | FileCheck %s --check-prefix=TUNED
// RUN: printf 'sm_90 f32 m=1\tcublaslt_us=fast\n' > %t.bad-tuning
// RUN: not kiln-opt %s -split-input-file -kiln-form-steps -kiln-select-impl="tuning-cache=%t.bad-tuning" 2>&1 | FileCheck %s --check-prefix=BADTUNING

// A BERT-base feed-forward matmul with bias and ReLU: one cuBLASLt call
// with the bias_relu epilogue. Row-major X[128x768] * W[768x3072] is the
// column-major call D[3072x128] = W' * X' (A is the weight, B the input).
// CHECK-LABEL: func.func @large_bias_relu
// CHECK: exec.step(%arg0, %arg1, %arg2) {gemm = {a = 1 : i64, alpha = 1.000000e+00 : f32, b = 0 : i64, batch = 1 : i64, beta = 0.000000e+00 : f32, bias = 2 : i64, c = -1 : i64, compute = "32F", deterministic = false, epilogue = "bias_relu", k = 768 : i64, lda = 3072 : i64, ldb = 768 : i64, ldc = 3072 : i64, m = 3072 : i64, n = 128 : i64, stride_a = 0 : i64, stride_b = 0 : i64, stride_c = 0 : i64, trans_a = false, trans_b = false, type = "f32", workspace = 6291456 : i64}, impl = "cublaslt"
// AUTO-SAME: impl_reason = "cuBLASLt {{[0-9.]+}} us, generated {{[0-9.]+}} us on H100 (cost model)"
// LIBRARY-SAME: impl_reason = "--impl=library; cuBLASLt
// GENERATED: impl = "generated", impl_reason = "--impl=generated"
// TF32: compute = "32F_FAST_TF32", deterministic = true
// A100: workspace = 4194304 : i64}, impl = "cublaslt", impl_reason = "cuBLASLt {{.*}} on A100 (cost model)"
// Without workspace there is nothing to reserve; with it, one region per
// stream after the buffers (128x3072 f32 = 1572864 bytes).
// NOWS-NOT: workspace_offset
// NOWS: workspace = 0 : i64
// NOWS-NOT: workspace_offset
// WS: exec.arena_bytes = 7864320
// WS: workspace_offset = 1572864
// BAD: precision must be strict or tf32, not 'fp8'
// BADARCH: arch must be a compute capability such as 90, not 2147483648
// BADWS: workspace-limit must be -1 (the GPU's recommended size) or a byte count, not -7
// TUNED-LABEL: func.func @large_bias_relu
// TUNED: impl = "generated", impl_reason = "cuBLASLt 20.5 us, generated 11.2 us measured on sm_90 (tuning cache)"
// TUNED-LABEL: func.func @small
// TUNED: impl_reason = "cuBLASLt {{.*}} (cost model)"
// BADTUNING: error: tuning cache: {{.*}}.bad-tuning:1: expected 'KEY<tab>cublaslt_us=N<tab>generated_us=N'
!x = tensor<128x768xf32, #kiln.enc<row_major, cuda:0>>
!w = tensor<768x3072xf32, #kiln.enc<row_major, cuda:0>>
!b = tensor<3072xf32, #kiln.enc<row_major, cuda:0>>
!y = tensor<128x3072xf32, #kiln.enc<row_major, cuda:0>>
func.func @large_bias_relu(%x: !x, %w: !w, %b: !b) -> !y {
  %0 = kiln.fusion matmul_epilogue (%x, %w, %b) : (!x, !w, !b) -> !y {
  ^bb0(%a: !x, %c: !w, %d: !b):
    %1 = kiln.matmul %a, %c : (!x, !w) -> !y
    %2 = kiln.add %1, %d : (!y, !b) -> !y
    %3 = kiln.relu %2 : (!y) -> !y
    kiln.yield %3 : !y
  }
  return %0 : !y
}

// -----

// A small matmul: the cost model prefers the generated kernel (the
// library call's fixed cost dominates); --impl=library overrides it.
// CHECK-LABEL: func.func @small
// AUTO: impl = "generated", impl_reason = "cuBLASLt {{[0-9.]+}} us, generated {{[0-9.]+}} us on H100 (cost model)"
// Transposed operands become cuBLASLt's transpose flags, swapped with the
// operands: transpose_b of the graph is trans_a of the call.
// LIBRARY: trans_a = true, trans_b = false
// LIBRARY-SAME: impl = "cublaslt", impl_reason = "--impl=library; cuBLASLt
!s = tensor<8x64xf32, #kiln.enc<row_major, cuda:0>>
!st = tensor<32x64xf32, #kiln.enc<row_major, cuda:0>>
!so = tensor<8x32xf32, #kiln.enc<row_major, cuda:0>>
func.func @small(%x: !s, %w: !st) -> !so {
  %0 = kiln.matmul %x, %w {transpose_b = true} : (!s, !st) -> !so
  return %0 : !so
}

// -----

// Scale, residual and bias in the order cuBLASLt applies them:
// relu(alpha * AB + beta * C + bias); batched lhs, broadcast rhs (stride 0).
// CHECK-LABEL: func.func @alpha_residual
// LIBRARY: alpha = 5.000000e-01 : f32, b = 0 : i64, batch = 4 : i64, beta = 1.000000e+00 : f32, bias = 3 : i64, c = 2 : i64
// LIBRARY-SAME: epilogue = "bias_relu"
// LIBRARY-SAME: stride_a = 0 : i64, stride_b = 2048 : i64, stride_c = 4096 : i64
!bx = tensor<4x32x64xf32, #kiln.enc<row_major, cuda:0>>
!bw = tensor<64x128xf32, #kiln.enc<row_major, cuda:0>>
!by = tensor<4x32x128xf32, #kiln.enc<row_major, cuda:0>>
!bb = tensor<128xf32, #kiln.enc<row_major, cuda:0>>
!sc = tensor<f32, #kiln.enc<row_major, cuda:0>>
func.func @alpha_residual(%x: !bx, %w: !bw, %r: !by, %b: !bb) -> !by {
  %half = kiln.constant dense<0.5> : tensor<f32> : !sc
  %0 = kiln.fusion matmul_epilogue (%x, %w, %r, %b, %half) : (!bx, !bw, !by, !bb, !sc) -> !by {
  ^bb0(%a: !bx, %c: !bw, %res: !by, %bias: !bb, %s: !sc):
    %1 = kiln.matmul %a, %c : (!bx, !bw) -> !by
    %2 = kiln.mul %1, %s : (!by, !sc) -> !by
    %3 = kiln.add %2, %res : (!by, !by) -> !by
    %4 = kiln.add %3, %bias : (!by, !bb) -> !by
    %5 = kiln.relu %4 : (!by) -> !by
    kiln.yield %5 : !by
  }
  return %0 : !by
}

// -----

// Epilogues cuBLASLt does not have stay generated, even with
// --impl=library, and say why.
// CHECK-LABEL: func.func @refused
// LIBRARY: impl = "generated", impl_reason = "not one cuBLASLt call: 'kiln.gelu' has no cuBLASLt epilogue"
// LIBRARY: impl = "generated", impl_reason = "not one cuBLASLt call: 'kiln.add' after the relu: cuBLASLt's epilogue ends with the activation"
// LIBRARY: impl = "generated", impl_reason = "not one cuBLASLt call: a scale after the bias or residual (cuBLASLt's alpha scales only the product)"
// LIBRARY: impl = "generated", impl_reason = "not one cuBLASLt call: an operand broadcasts some batch dimensions but not all
!bx = tensor<4x32x64xf32, #kiln.enc<row_major, cuda:0>>
!bw = tensor<64x128xf32, #kiln.enc<row_major, cuda:0>>
!by = tensor<4x32x128xf32, #kiln.enc<row_major, cuda:0>>
!bb = tensor<128xf32, #kiln.enc<row_major, cuda:0>>
!sc = tensor<f32, #kiln.enc<row_major, cuda:0>>
!px = tensor<3x1x5x13xf32, #kiln.enc<row_major, cuda:0>>
!pw = tensor<4x13x7xf32, #kiln.enc<row_major, cuda:0>>
!py = tensor<3x4x5x7xf32, #kiln.enc<row_major, cuda:0>>
func.func @refused(%x: !bx, %w: !bw, %r: !by, %b: !bb, %p: !px, %q: !pw) -> (!by, !by, !by, !py) {
  %half = kiln.constant dense<0.5> : tensor<f32> : !sc
  %0 = kiln.fusion matmul_epilogue (%x, %w) : (!bx, !bw) -> !by {
  ^bb0(%a: !bx, %c: !bw):
    %1 = kiln.matmul %a, %c : (!bx, !bw) -> !by
    %2 = kiln.gelu %1 : (!by) -> !by
    kiln.yield %2 : !by
  }
  %3 = kiln.fusion matmul_epilogue (%x, %w, %r) : (!bx, !bw, !by) -> !by {
  ^bb0(%a: !bx, %c: !bw, %res: !by):
    %1 = kiln.matmul %a, %c : (!bx, !bw) -> !by
    %2 = kiln.relu %1 : (!by) -> !by
    %4 = kiln.add %2, %res : (!by, !by) -> !by
    kiln.yield %4 : !by
  }
  %5 = kiln.fusion matmul_epilogue (%x, %w, %b, %half) : (!bx, !bw, !bb, !sc) -> !by {
  ^bb0(%a: !bx, %c: !bw, %bias: !bb, %s: !sc):
    %1 = kiln.matmul %a, %c : (!bx, !bw) -> !by
    %2 = kiln.add %1, %bias : (!by, !bb) -> !by
    %4 = kiln.mul %2, %s : (!by, !sc) -> !by
    kiln.yield %4 : !by
  }
  %6 = kiln.matmul %p, %q : (!px, !pw) -> !py
  return %0, %3, %5, %6 : !by, !by, !by, !py
}

// -----

// Steps that are neither matmuls nor convolutions get no decision. A small
// f32 convolution stays generated by the cost model; with --impl=library it
// is one cuDNN graph (NCHW descriptor; the unfused relu is its own step).
// CHECK-LABEL: func.func @others
// CHECK-NOT: impl = "cublaslt"
// AUTO: impl = "generated", impl_reason = "cuDNN {{[0-9.]+}} us, generated {{[0-9.]+}} us on H100 (cost model)"
// LIBRARY: conv = {allow_tf32 = false, bias = -1 : i64, deterministic = false, dilations = array<i64: 1, 1>, epilogue = "none", filter = array<i64: 4, 3, 3, 3>, groups = 1 : i64, input = array<i64: 1, 3, 8, 8>, layout = "nchw", output = array<i64: 1, 4, 6, 6>, padding = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, type = "f32", w = 1 : i64, workspace = 1048576 : i64, x = 0 : i64}, impl = "cudnn", impl_reason = "--impl=library; cuDNN
// GENERATED: impl = "generated", impl_reason = "--impl=generated"
// CHECK: kiln.relu
// CHECK-NOT: impl =
!ci = tensor<1x3x8x8xf32, #kiln.enc<nchw, cuda:0>>
!cf = tensor<4x3x3x3xf32, #kiln.enc<row_major, cuda:0>>
!co = tensor<1x4x6x6xf32, #kiln.enc<nchw, cuda:0>>
func.func @others(%x: !ci, %f: !cf) -> !co {
  %0 = kiln.conv2d %x, %f : (!ci, !cf) -> !co
  %1 = kiln.relu %0 : (!co) -> !co
  return %1 : !co
}

// -----

// f16 convolutions have no generated kernel: cuDNN even under the cost
// model. An epilogue cuDNN does not fuse here keeps the step generated (and
// so, for f16, on the host).
// CHECK-LABEL: func.func @half_convs
// AUTO: impl = "cudnn", impl_reason = "kiln generates f32 convolutions only; cuDNN computes this one"
// AUTO: impl = "generated", impl_reason = "not one cuDNN graph: 'kiln.sigmoid' has no fused cuDNN epilogue here"
!hi = tensor<1x8x8x8xf16, #kiln.enc<nchw, cuda:0>>
!hf = tensor<8x8x3x3xf16, #kiln.enc<row_major, cuda:0>>
!hb = tensor<8xf16, #kiln.enc<row_major, cuda:0>>
!ho = tensor<1x8x6x6xf16, #kiln.enc<nchw, cuda:0>>
func.func @half_convs(%x: !hi, %f: !hf, %b: !hb) -> (!ho, !ho) {
  %0 = kiln.fusion conv_epilogue (%x, %f, %b) : (!hi, !hf, !hb) -> !ho {
  ^bb0(%a: !hi, %c: !hf, %d: !hb):
    %1 = kiln.conv2d %a, %c, %d : (!hi, !hf, !hb) -> !ho
    %2 = kiln.relu %1 : (!ho) -> !ho
    kiln.yield %2 : !ho
  }
  %3 = kiln.fusion conv_epilogue (%x, %f) : (!hi, !hf) -> !ho {
  ^bb0(%a: !hi, %c: !hf):
    %1 = kiln.conv2d %a, %c : (!hi, !hf) -> !ho
    %2 = kiln.sigmoid %1 : (!ho) -> !ho
    kiln.yield %2 : !ho
  }
  return %0, %3 : !ho, !ho
}

// -----

// Channels last throughout (NHWC input and output, KRSC filter, as
// kiln-assign-layouts gives f16 convolutions) is one cuDNN graph described
// so; a convolution in mixed layouts is not.
// CHECK-LABEL: func.func @channels_last_convs
// AUTO: layout = "nhwc"{{.*}} impl = "cudnn"
// AUTO: impl = "generated", impl_reason = "not one cuDNN graph: the convolution is neither NCHW nor NHWC throughout"
!nx = tensor<1x8x5x5xf16, #kiln.enc<nhwc, cuda:0>>
!nw = tensor<8x8x3x3xf16, #kiln.enc<nhwc, cuda:0>>
!rw = tensor<8x8x3x3xf16, #kiln.enc<row_major, cuda:0>>
!ny = tensor<1x8x3x3xf16, #kiln.enc<nhwc, cuda:0>>
func.func @channels_last_convs(%x: !nx, %w: !nw, %r: !rw) -> (!ny, !ny) {
  %0 = kiln.conv2d %x, %w : (!nx, !nw) -> !ny
  %1 = kiln.conv2d %x, %r : (!nx, !rw) -> !ny
  return %0, %1 : !ny, !ny
}

// -----

// Must not fire: a matmul kiln-place left on the host (--host-ops, or the
// cost model) runs there, the reference's way, never as a library call,
// even with --impl=library.
// (The CHECK lines hold in the default and the --impl=library runs.)
// CHECK-LABEL: func.func @on_the_host
// CHECK-NOT: impl =
!hx = tensor<128x768xf32, #kiln.enc<row_major, cpu>>
!hw = tensor<768x3072xf32, #kiln.enc<row_major, cpu>>
!hy = tensor<128x3072xf32, #kiln.enc<row_major, cpu>>
func.func @on_the_host(%x: !hx, %w: !hw) -> !hy {
  %0 = kiln.matmul %x, %w : (!hx, !hw) -> !hy
  return %0 : !hy
}
