func.func @m(%x: tensor<?x?x8xf32, #kiln.enc<row_major, cpu, [s0, s1]>>, %w: tensor<8x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<?x4xf32, #kiln.enc<row_major, cpu, [s0 * s1]>> attributes {kiln.symbols = [{name = "b", min = 1, max = 4, opt = 2}, {name = "s", min = 1, max = 16, opt = 8}]} {
  %0 = kiln.reshape %x {shape = array<i64: -1, 8>} : (tensor<?x?x8xf32, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
  %1 = kiln.matmul %0, %w : (tensor<?x8xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>, tensor<8x4xf32, #kiln.enc<row_major, cpu>>) -> tensor<?x4xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
  %2 = kiln.relu %1 : (tensor<?x4xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>) -> tensor<?x4xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
  return %2 : tensor<?x4xf32, #kiln.enc<row_major, cpu, [s0 * s1]>>
}
