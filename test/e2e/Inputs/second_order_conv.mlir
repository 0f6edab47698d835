// A gradient of a gradient through a convolution (kiln.gradient, as
// ONNX's Gradient): t = |d/dw sum(conv(x, w)^2)|^2, and its gradient in x.
// The second sweep differentiates the first one's expansion, the filter
// flipped by a slice backwards included. second_order.py checks it.
!x = tensor<1x1x5x5xf32, #kiln.enc<row_major, cpu>>
!w = tensor<1x1x3x3xf32, #kiln.enc<row_major, cpu>>
!y = tensor<1x1x3x3xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>
func.func @f(%x: !x, %w: !w) -> (!x) {
  %y = kiln.conv2d %x, %w : (!x, !w) -> !y
  %y2 = kiln.mul %y, %y : (!y, !y) -> !y
  %s = kiln.reduce_sum %y2 {axes = array<i64: 0, 1, 2, 3>} : (!y) -> !s
  %gw = kiln.gradient %s wrt %w : (!s, !w) -> !w
  %gw2 = kiln.mul %gw, %gw : (!w, !w) -> !w
  %t = kiln.reduce_sum %gw2 {axes = array<i64: 0, 1, 2, 3>} : (!w) -> !s
  %gx = kiln.gradient %t wrt %x : (!s, !x) -> !x
  return %gx : !x
}
