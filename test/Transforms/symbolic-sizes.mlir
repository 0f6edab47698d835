// Passes over symbolic sizes. Fusion takes them: regions form over values
// of one symbolic shape as over static ones, and stop where a consumer's
// sizes differ. The CPU's batch-norm folding and channels-last chains take
// a dynamic batch over static images. Placement puts on the device the
// ops whose kernels take their sizes as arguments (elementwise, data
// movement, row reductions) and keeps the rest on the host, saying why.
// The GPU layouts and sibling fusion take static shapes only so far: a
// function with symbolic sizes passes through each of them unchanged.
// RUN: kiln-opt %s -split-input-file --kiln-fusion-pipeline | FileCheck %s --check-prefix=FUSE
// RUN: kiln-opt %s -split-input-file --kiln-assign-layouts --kiln-fuse-siblings | FileCheck %s --check-prefix=STATIC
// RUN: kiln-opt %s -split-input-file --kiln-place 2>&1 | FileCheck %s --check-prefix=PLACE
// RUN: kiln-opt %s -split-input-file --kiln-fold-batch-norm --kiln-cpu-channels-last | FileCheck %s --check-prefix=CPU

!x = tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0]>>
!img = tensor<?x4x6x6xf32, #kiln.enc<row_major, cpu, [s0]>>
!w = tensor<8x8xf32, #kiln.enc<row_major, cpu>>
!v = tensor<8xf32, #kiln.enc<row_major, cpu>>
!c = tensor<4xf32, #kiln.enc<row_major, cpu>>

// FUSE-LABEL: func.func @epilogues
// FUSE: kiln.fusion matmul_epilogue
// FUSE-SAME: -> tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0]>>
// FUSE: kiln.matmul
// FUSE: kiln.add
// FUSE: kiln.relu
// FUSE: kiln.fusion conv_epilogue
// FUSE-SAME: -> tensor<?x4x6x6xf32, #kiln.enc<row_major, cpu, [s0]>>
// FUSE: kiln.conv2d
// FUSE: kiln.batch_norm
// FUSE: kiln.relu
// CPU-LABEL: func.func @epilogues
// CPU: %[[IN:.*]] = kiln.relayout %arg1 {dim_order = array<i64: 0, 2, 3, 1>} {{.*}} -> tensor<?x4x6x6xf32, #kiln.enc<nhwc, cpu, [s0]>>
// CPU: kiln.matmul
// CPU: %[[C:.*]] = kiln.conv2d %[[IN]], {{.*}} -> tensor<?x4x6x6xf32, #kiln.enc<nhwc, cpu, [s0]>>
// CPU-NOT: kiln.batch_norm
// CPU: %[[R:.*]] = kiln.relu %[[C]] {{.*}} -> tensor<?x4x6x6xf32, #kiln.enc<nhwc, cpu, [s0]>>
// CPU: kiln.relayout %[[R]] {{.*}} -> tensor<?x4x6x6xf32, #kiln.enc<row_major, cpu, [s0]>>
// The matmul and the convolution go to the device (cuBLASLt and cuDNN take
// their sizes per run), their epilogues with them.
// PLACE-LABEL: func.func @epilogues
// PLACE: %[[X:.*]] = kiln.transfer %arg0 {to = "cuda:0"}
// PLACE: kiln.matmul %[[X]], %w : {{.*}} -> tensor<?x8xf32, #kiln.enc<row_major, cuda:0, [s0]>>
// PLACE: kiln.add {{.*}} -> tensor<?x8xf32, #kiln.enc<row_major, cuda:0, [s0]>>
// PLACE: kiln.relu {{.*}} -> tensor<?x8xf32, #kiln.enc<row_major, cuda:0, [s0]>>
// PLACE: kiln.conv2d {{.*}} -> tensor<?x4x6x6xf32, #kiln.enc<row_major, cuda:0, [s0]>>
// PLACE: kiln.batch_norm {{.*}} -> tensor<?x4x6x6xf32, #kiln.enc<row_major, cuda:0, [s0]>>
// STATIC-LABEL: func.func @epilogues
// STATIC-NOT: kiln.fusion
// STATIC-NOT: kiln.transfer
// STATIC-NOT: kiln.relayout
// STATIC: kiln.matmul
// STATIC: kiln.conv2d
// STATIC: kiln.batch_norm
// STATIC-NOT: kiln.relayout
func.func @epilogues(%x: !x, %img: !img) -> (!x, !img)
    attributes {kiln.symbols = [{name = "batch", min = 1, max = 8, opt = 4}]} {
  %w = kiln.weight "w" = dense<0.5> : tensor<8x8xf32> : !w
  %b = kiln.weight "b" = dense<0.25> : tensor<8xf32> : !v
  %0 = kiln.matmul %x, %w : (!x, !w) -> !x
  %1 = kiln.add %0, %b : (!x, !v) -> !x
  %2 = kiln.relu %1 : (!x) -> !x
  %f = kiln.weight "f" = dense<0.5> : tensor<4x4x3x3xf32> : tensor<4x4x3x3xf32, #kiln.enc<row_major, cpu>>
  %c = kiln.weight "c" = dense<1.0> : tensor<4xf32> : !c
  %3 = kiln.conv2d %img, %f {padding = array<i64: 1, 1, 1, 1>} : (!img, tensor<4x4x3x3xf32, #kiln.enc<row_major, cpu>>) -> !img
  %4 = kiln.batch_norm %3, %c, %c, %c, %c {epsilon = 1.0e-5 : f64} : (!img, !c, !c, !c, !c) -> !img
  %5 = kiln.relu %4 : (!img) -> !img
  return %2, %5 : !x, !img
}

// -----

!a = tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0]>>
!b = tensor<?x?x8xf32, #kiln.enc<row_major, cpu, [s1, s0]>>

// The consumer broadcasts the matmul's [s0, 8] to [s1, s0, 8]: another
// shape, so the epilogue stops before it.
// FUSE-LABEL: func.func @broadcasting_consumer
// FUSE-NOT: kiln.fusion
// FUSE: kiln.matmul
// FUSE-NEXT: kiln.add
// FUSE-NEXT: return
// STATIC-LABEL: func.func @broadcasting_consumer
func.func @broadcasting_consumer(%x: !a, %y: !b) -> !b
    attributes {kiln.symbols = [{name = "n", min = 1, max = 8, opt = 4}, {name = "m", min = 1, max = 4, opt = 2}]} {
  %w = kiln.weight "w" = dense<0.5> : tensor<8x8xf32> : tensor<8x8xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.matmul %x, %w : (!a, tensor<8x8xf32, #kiln.enc<row_major, cpu>>) -> !a
  %1 = kiln.add %0, %y : (!a, !b) -> !b
  return %1 : !b
}

// -----

!p = tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0]>>

// Siblings reading one value (Q, K, V projections) stay apart over
// symbolic sizes: the widened weight's slices would need the size.
// STATIC-LABEL: func.func @siblings
// STATIC-COUNT-2: kiln.matmul
// STATIC-NOT: kiln.concat
func.func @siblings(%x: !p) -> (!p, !p)
    attributes {kiln.symbols = [{name = "n", min = 1, max = 8, opt = 4}]} {
  %w1 = kiln.weight "w1" = dense<0.5> : tensor<8x8xf32> : tensor<8x8xf32, #kiln.enc<row_major, cpu>>
  %w2 = kiln.weight "w2" = dense<0.25> : tensor<8x8xf32> : tensor<8x8xf32, #kiln.enc<row_major, cpu>>
  %0 = kiln.matmul %x, %w1 : (!p, tensor<8x8xf32, #kiln.enc<row_major, cpu>>) -> !p
  %1 = kiln.matmul %x, %w2 : (!p, tensor<8x8xf32, #kiln.enc<row_major, cpu>>) -> !p
  return %0, %1 : !p, !p
}

// -----

// Pooling over a symbolic batch goes to the device (its window's image is
// static), as does a float sum over the batch itself (a loop of symbolic
// extent per output element); an argmax over the batch has no kernel taking
// its sizes yet: it stays on the host, saying why.
// PLACE: warning: runs on the host: its sizes are known only at run time, and its device code takes them as constants so far
// PLACE-NEXT: %2 = kiln.argmax %0
// PLACE-LABEL: func.func @pooling
// PLACE: %[[P:.*]] = kiln.max_pool2d %{{.*}} -> tensor<?x4x3x3xf32, #kiln.enc<row_major, cuda:0, [s0]>>
// PLACE: %[[H:.*]] = kiln.transfer %[[P]] {to = "cpu"}
// PLACE: kiln.reduce_sum %[[P]] {{.*}} -> tensor<4x3x3xf32, #kiln.enc<row_major, cuda:0>>
// PLACE: kiln.argmax %[[H]] {{.*}} -> tensor<4x3x3xi64, #kiln.enc<row_major, cpu>>
!img = tensor<?x4x6x6xf32, #kiln.enc<row_major, cpu, [s0]>>
!pooled = tensor<?x4x3x3xf32, #kiln.enc<row_major, cpu, [s0]>>
!summed = tensor<4x3x3xf32, #kiln.enc<row_major, cpu>>
!picked = tensor<4x3x3xi64, #kiln.enc<row_major, cpu>>
func.func @pooling(%x: !img) -> (!summed, !picked)
    attributes {kiln.symbols = [{name = "batch", min = 1, max = 8, opt = 4}]} {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (!img) -> !pooled
  %1 = kiln.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (!pooled) -> !summed
  %2 = kiln.argmax %0 {axis = 0 : i64, keepdims = false} : (!pooled) -> !picked
  return %1, %2 : !summed, !picked
}
