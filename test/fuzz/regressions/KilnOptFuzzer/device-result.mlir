!c = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!g = tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>

func.func @device_boundary(%x: !c) -> !g {
  %0 = kiln.relu %x : (!c) -> !c
  %1 = kiln.transfer %0 {to = "cuda:0"} : (!c) -> !g
  %2 = kiln.neg %1 : (!g) -> !g
  return %2 : !g
}
