// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// Every value's type shows shape, dtype, layout and device; the identity
// order prints as row_major whatever it was written as.

// CHECK-LABEL: func.func @encodings
// CHECK-SAME: tensor<2x3xf32, #kiln.enc<row_major, cpu>>
// CHECK-SAME: tensor<1x3x8x8xf16, #kiln.enc<nhwc, cuda:0>>
// CHECK-SAME: tensor<1x3x8x8xbf16, #kiln.enc<row_major, cuda:1>>
// CHECK-SAME: tensor<2x3x4xi8, #kiln.enc<perm[2, 0, 1], cpu>>
// CHECK-SAME: tensor<2x3xi1, #kiln.enc<row_major, cpu>>
// CHECK-SAME: tensor<5xi64, #kiln.enc<row_major, cpu>>
// CHECK-SAME: tensor<f64, #kiln.enc<row_major, cpu>>
// CHECK-SAME: tensor<4x4xi32, #kiln.enc<row_major, cpu>>
func.func @encodings(
    %a: tensor<2x3xf32, #kiln.enc<row_major, cpu>>,
    %b: tensor<1x3x8x8xf16, #kiln.enc<nhwc, cuda:0>>,
    %c: tensor<1x3x8x8xbf16, #kiln.enc<nchw, cuda:1>>,
    %d: tensor<2x3x4xi8, #kiln.enc<perm[2, 0, 1], cpu>>,
    %e: tensor<2x3xi1, #kiln.enc<row_major, cpu>>,
    %f: tensor<5xi64, #kiln.enc<row_major, cpu>>,
    %g: tensor<f64, #kiln.enc<row_major, cpu>>,
    %h: tensor<4x4xi32, #kiln.enc<perm[0, 1], cpu>>) {
  return
}
