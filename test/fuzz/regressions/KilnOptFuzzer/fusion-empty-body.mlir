!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!g = tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>

func.func @transfer_inside(%x: !t) -> !g {
  %r = kiln.fusion loop (%x) : (!t) -> !g {
  ^bb0(%a: !t):
   }
  return %r : !g
}
