// Every op here has device code but the f32 NHWC convolution; host-ops
// keeps the argsorts on the host, the ops these tests place there.
// RUN: kiln-opt %s -split-input-file -kiln-place=host-ops=argsort -verify-diagnostics | FileCheck %s
// RUN: not kiln-opt %s -split-input-file -kiln-place=device=cpu 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: kiln-place: device must be cuda:N, got 'cpu'
// RUN: not kiln-opt %s -split-input-file -kiln-place=host-ops=softmx 2>&1 | FileCheck %s --check-prefix=BADOP
// BADOP: error: kiln-place: host-ops names 'softmx', which is not a kiln op
// Without host-ops, an argsort has device code (a rank sort).
// RUN: kiln-opt %s -split-input-file -kiln-place=warn=0 | FileCheck %s --check-prefix=SORT
// SORT-LABEL: func.func @host_fallback
// SORT: kiln.argsort {{.*}} -> tensor<4x8xi64, #kiln.enc<row_major, cuda:0>>

!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!w = tensor<8x8xf32, #kiln.enc<row_major, cpu>>

// Ops with device code move to cuda:0; the model input is copied there once
// for all its device users, the weight moves there (only device ops read
// it), and the result comes back for the return.
// CHECK-LABEL: func.func @on_device
// CHECK-SAME: (%arg0: tensor<4x8xf32, #kiln.enc<row_major, cpu>>
// CHECK: %[[X:.*]] = kiln.transfer %arg0 {to = "cuda:0"}
// CHECK: %[[W:.*]] = kiln.weight "w" {{.*}} : tensor<8x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: %[[M:.*]] = kiln.matmul %[[X]], %[[W]] : {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: %[[R:.*]] = kiln.relu %[[M]] : {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: %[[N:.*]] = kiln.neg %[[X]]
// CHECK: %[[A:.*]] = kiln.add %[[R]], %[[N]]
// CHECK: %[[B:.*]] = kiln.transfer %[[A]] {to = "cpu"}
// CHECK: return %[[B]] : tensor<4x8xf32, #kiln.enc<row_major, cpu>>
func.func @on_device(%x: !c) -> !c {
  %w = kiln.weight "w" = dense<0.5> : tensor<8x8xf32> : !w
  %0 = kiln.matmul %x, %w : (!c, !w) -> !c
  %1 = kiln.relu %0 : (!c) -> !c
  %2 = kiln.neg %x : (!c) -> !c
  %3 = kiln.add %1, %2 : (!c, !c) -> !c
  return %3 : !c
}

// -----

!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!i = tensor<4x8xi64, #kiln.enc<row_major, cpu>>
!t = tensor<8x4xf32, #kiln.enc<row_major, cpu>>

// An op kept on the host stays there, with a warning, and copies
// around it: to the host before, back to the device after. A transpose has
// device code (a loop kernel by index arithmetic).
// CHECK-LABEL: func.func @host_fallback
// CHECK: %[[X:.*]] = kiln.transfer %arg0 {to = "cuda:0"}
// CHECK: %[[E:.*]] = kiln.exp %[[X]] : {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: %[[H:.*]] = kiln.transfer %[[E]] {to = "cpu"}
// CHECK: %[[A:.*]] = kiln.argsort %[[H]] {{.*}} -> tensor<4x8xi64, #kiln.enc<row_major, cpu>>
// CHECK: kiln.transpose %[[E]] {{.*}} -> tensor<8x4xf32, #kiln.enc<row_major, cuda:0>>
func.func @host_fallback(%x: !c) -> (!i, !t) {
  %0 = kiln.exp %x : (!c) -> !c
  // expected-warning @+1 {{runs on the host: --host-ops keeps it there; its operands and results are copied between host and device}}
  %1 = kiln.argsort %0 {axis = 0 : i64} : (!c) -> !i
  %2 = kiln.transpose %0 {perm = array<i64: 1, 0>} : (!c) -> !t
  return %1, %2 : !i, !t
}

// -----

!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!i = tensor<4x8xi64, #kiln.enc<row_major, cpu>>
!r = tensor<8xf32, #kiln.enc<row_major, cpu>>
!a = tensor<8xi64, #kiln.enc<row_major, cpu>>
!g = tensor<2x8xf32, #kiln.enc<row_major, cpu>>
!n = tensor<2xi32, #kiln.enc<row_major, cpu>>

// Integer ops, reductions and argmax over leading axes, slices, concat,
// pad and gathers have device code (per-element loop kernels).
// CHECK-LABEL: func.func @device_by_type_and_axes
// CHECK: kiln.add {{.*}} -> tensor<4x8xi64, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.reduce_sum {{.*}} -> tensor<8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.argmax {{.*}} -> tensor<8xi64, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.gather {{.*}} -> tensor<2x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.slice {{.*}} -> tensor<2x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.concat {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.pad {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
func.func @device_by_type_and_axes(%x: !c, %n: !i, %ids: !n) -> (!i, !r, !a, !c, !c) {
  %0 = kiln.add %n, %n : (!i, !i) -> !i
  %1 = kiln.reduce_sum %x {axes = array<i64: 0>} : (!c) -> !r
  %2 = kiln.argmax %x {axis = 0 : i64} : (!c) -> !a
  %3 = kiln.gather %x, %ids {axis = 0 : i64} : (!c, !n) -> !g
  %4 = kiln.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 3, 8>, steps = array<i64: 1, 1>} : (!c) -> !g
  %5 = kiln.concat %3, %4 {axis = 0 : i64} : (!g, !g) -> !c
  %6 = kiln.pad %4 {low = array<i64: 1, 0>, high = array<i64: 1, 0>} : (!g) -> !c
  return %0, %1, %2, %5, %6 : !i, !r, !a, !c, !c
}

// -----

!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!w = tensor<8x8xi32, #kiln.enc<row_major, cpu>>
!m = tensor<4x8xi32, #kiln.enc<row_major, cpu>>
!p = tensor<1x1x4x8xi32, #kiln.enc<row_major, cpu>>
!i = tensor<4x8xi64, #kiln.enc<row_major, cpu>>
!x = tensor<1x8x6x6xf32, #kiln.enc<nhwc, cpu>>
!f = tensor<8x8x3x3xf32, #kiln.enc<nhwc, cpu>>
!y = tensor<1x8x4x4xf32, #kiln.enc<nhwc, cpu>>

// Per-element loops cover a softmax over a leading axis, an integer matmul
// and integer pooling; what stays on the host says why: an argsort
// (host-ops), an f32 convolution channels last (kiln-assign-layouts makes
// those NCHW).
// CHECK-LABEL: func.func @host_by_type_and_axes
// CHECK: kiln.softmax {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.matmul {{.*}} -> tensor<4x8xi32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.max_pool2d {{.*}} -> tensor<1x1x4x8xi32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.argsort {{.*}} -> tensor<4x8xi64, #kiln.enc<row_major, cpu>>
// CHECK: kiln.conv2d {{.*}} -> tensor<1x8x4x4xf32, #kiln.enc<nhwc, cpu>>
func.func @host_by_type_and_axes(%x: !c, %a: !m, %b: !w, %q: !p, %img: !x, %filter: !f) -> (!c, !m, !p, !i, !y) {
  %0 = kiln.softmax %x {axis = 0 : i64} : (!c) -> !c
  %1 = kiln.matmul %a, %b : (!m, !w) -> !m
  %2 = kiln.max_pool2d %q {kernel = array<i64: 1, 1>} : (!p) -> !p
  // expected-warning @+1 {{runs on the host: --host-ops keeps it there}}
  %3 = kiln.argsort %x {axis = 1 : i64} : (!c) -> !i
  // expected-warning @+1 {{runs on the host: only NCHW and f16 and bf16 NHWC convolutions have device code}}
  %4 = kiln.conv2d %img, %filter : (!x, !f) -> !y
  return %0, %1, %2, %3, %4 : !c, !m, !p, !i, !y
}

// -----

!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>

// The inputs' copies come in argument order; a relayout (a loop kernel
// reads and writes any layout) runs on the device too, and its result is
// copied back.
// CHECK-LABEL: func.func @argument_order
// CHECK: kiln.transfer %arg0 {to = "cuda:0"}
// CHECK-NEXT: kiln.transfer %arg1 {to = "cuda:0"}
// CHECK: %[[R:.*]] = kiln.relayout {{.*}} -> tensor<4x8xf32, #kiln.enc<perm[1, 0], cuda:0>>
// CHECK-NEXT: kiln.transfer %[[R]] {to = "cpu"}
func.func @argument_order(%a: !c, %b: !c) -> tensor<4x8xf32, #kiln.enc<perm[1, 0], cpu>> {
  %0 = kiln.mul %b, %a : (!c, !c) -> !c
  %1 = kiln.relayout %0 {dim_order = array<i64: 1, 0>} : (!c) -> tensor<4x8xf32, #kiln.enc<perm[1, 0], cpu>>
  return %1 : tensor<4x8xf32, #kiln.enc<perm[1, 0], cpu>>
}

// -----

!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!g = tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>

// A function that already returns a device value keeps its signature: the
// result is left on the device, not copied to the host (found by
// KilnOptFuzzer: the return no longer matched the function type).
// CHECK-LABEL: func.func @device_result
// CHECK: %[[N:.*]] = kiln.neg {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK-NOT: kiln.transfer %[[N]]
// CHECK: return %[[N]] : tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
func.func @device_result(%x: !c) -> !g {
  %0 = kiln.relu %x : (!c) -> !c
  %1 = kiln.transfer %0 {to = "cuda:0"} : (!c) -> !g
  %2 = kiln.neg %1 : (!g) -> !g
  return %2 : !g
}

// -----

// Convolutions: channels last (as kiln-assign-layouts gives Tensor Core
// ones) has device code in f16 (cuDNN); in f32, only NCHW has (kiln's own
// kernel or cuDNN), so an f32 one channels last stays on the host.
!xh = tensor<1x8x5x5xf16, #kiln.enc<nhwc, cpu>>
!wh = tensor<8x8x1x1xf16, #kiln.enc<nhwc, cpu>>
!xf = tensor<1x8x5x5xf32, #kiln.enc<nhwc, cpu>>
!wf = tensor<8x8x1x1xf32, #kiln.enc<nhwc, cpu>>
// CHECK-LABEL: func.func @convs_channels_last
// CHECK: kiln.conv2d {{.*}} -> tensor<1x8x5x5xf16, #kiln.enc<nhwc, cuda:0>>
// CHECK: kiln.conv2d {{.*}} -> tensor<1x8x5x5xf32, #kiln.enc<nhwc, cpu>>
func.func @convs_channels_last(%a: !xh, %b: !xf) -> (!xh, !xf) {
  %wh = kiln.weight "wh" = dense<0.5> : tensor<8x8x1x1xf16> : !wh
  %wf = kiln.weight "wf" = dense<0.5> : tensor<8x8x1x1xf32> : !wf
  %h = kiln.conv2d %a, %wh : (!xh, !wh) -> !xh
  // expected-warning @+1 {{runs on the host: only NCHW and f16 and bf16 NHWC convolutions have device code}}
  %f = kiln.conv2d %b, %wf : (!xf, !wf) -> !xf
  return %h, %f : !xh, !xf
}

// -----

!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!i = tensor<4x8xi64, #kiln.enc<row_major, cpu>>
!s = tensor<4x2xi64, #kiln.enc<row_major, cpu>>
!n = tensor<4x2xi32, #kiln.enc<row_major, cpu>>
!bi = tensor<256x1024xi64, #kiln.enc<row_major, cpu>>
!bc = tensor<256x1024xf32, #kiln.enc<row_major, cpu>>

// The cost model: small ops that continue a host chain (after a host op)
// stay on the host rather than pay a launch and two copies.
// Must not fire: a large op after a host op (the device is cheaper with its
// copies), an op after a device op, an op that reads only model inputs.
// CHECK-LABEL: func.func @cost_model
// CHECK: kiln.argsort {{.*}} -> tensor<4x8xi64, #kiln.enc<row_major, cpu>>
// CHECK: kiln.slice {{.*}} -> tensor<4x2xi64, #kiln.enc<row_major, cpu>>
// CHECK: kiln.cast {{.*}} -> tensor<4x2xi32, #kiln.enc<row_major, cpu>>
// CHECK: kiln.argsort {{.*}} -> tensor<256x1024xi64, #kiln.enc<row_major, cpu>>
// CHECK: kiln.add {{.*}} -> tensor<256x1024xi64, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.exp {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
// CHECK: kiln.relu {{.*}} -> tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>
func.func @cost_model(%x: !c, %big: !bc) -> (!n, !bi, !c) {
  // expected-warning @+1 {{runs on the host: --host-ops keeps it there}}
  %0 = kiln.argsort %x {axis = 1 : i64} : (!c) -> !i
  // expected-warning @+1 {{runs on the host: it continues a host chain and the cost model puts it there (10.0 us on the host, 15.0 us on the device with its copies)}}
  %1 = kiln.slice %0 {starts = array<i64: 0, 0>, ends = array<i64: 4, 2>, steps = array<i64: 1, 1>} : (!i) -> !s
  // expected-warning @+1 {{runs on the host: it continues a host chain and the cost model puts it there}}
  %2 = kiln.cast %1 {to = i32} : (!s) -> !n
  // expected-warning @+1 {{runs on the host: --host-ops keeps it there}}
  %3 = kiln.argsort %big {axis = 1 : i64} : (!bc) -> !bi
  %4 = kiln.add %3, %3 : (!bi, !bi) -> !bi
  %5 = kiln.exp %x : (!c) -> !c
  %6 = kiln.relu %5 : (!c) -> !c
  return %2, %4, %6 : !n, !bi, !c
}
