// Compiled CPU runs over symbolic sizes (test/runtime/cpu-symbolic-runs.test).
!x = tensor<?x?x64xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
!h = tensor<?x?x128xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
!m = tensor<?x?xi64, #kiln.enc<row_major, cpu, [s0, s1]>>
!pos = tensor<1x?x64xf32, #kiln.enc<row_major, cpu, [s1]>>
!s = tensor<?x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
!scores = tensor<?x2x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>
func.func @runs(%x: !x {kiln.name = "x"}, %h: !h {kiln.name = "h"}, %mask: !m {kiln.name = "mask"},
                %table: tensor<64x64xf32, #kiln.enc<row_major, cpu>> {kiln.name = "table"},
                %sc: !scores {kiln.name = "scores"},
                %square: tensor<?x1x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>> {kiln.name = "square"})
    -> (!h {kiln.name = "gelu"}, !x {kiln.name = "pooled"}, !x {kiln.name = "embedded"}, !s {kiln.name = "probs"},
        !scores {kiln.name = "masked"}, !scores {kiln.name = "attention"}, !s {kiln.name = "selected"},
        !scores {kiln.name = "square_attention"},
        tensor<?x2x?x3xf32, #kiln.enc<row_major, cpu, [s0, s1]>> {kiln.name = "spread"})
    attributes {kiln.symbols = [{name = "batch", min = 1, max = 4, opt = 2}, {name = "seq", min = 1, max = 64, opt = 16}]} {
  // Every read full or a scalar: rows of 128, the element count symbolic.
  %c = kiln.constant dense<1.41421> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %0 = kiln.div %h, %c : (!h, tensor<f32, #kiln.enc<row_major, cpu>>) -> !h
  %1 = kiln.erf %0 : (!h) -> !h
  %gelu = kiln.mul %h, %1 : (!h, !h) -> !h
  // The mask, one value per row of 64: read at the row's index.
  %2 = kiln.reshape %mask {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, s1, 1)>} : (!m) -> tensor<?x?x1xi64, #kiln.enc<row_major, cpu, [s0, s1]>>
  %3 = kiln.broadcast %2 {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, s1, 64)>} : (tensor<?x?x1xi64, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x?x64xi64, #kiln.enc<row_major, cpu, [s0, s1]>>
  %4 = kiln.cast %3 {to = f32} : (tensor<?x?x64xi64, #kiln.enc<row_major, cpu, [s0, s1]>>) -> !x
  %pooled = kiln.mul %x, %4 : (!x, !x) -> !x
  // Positions [1, seq, 64] repeating over the batch: seq rows, a count the
  // kernel reads at run time.
  %pos = kiln.slice %table {starts = array<i64: 0, 0>, ends = array<i64: 0, 64>, steps = array<i64: 1, 1>, end_sizes = affine_map<()[s0, s1] -> (s1, 64)>} : (tensor<64x64xf32, #kiln.enc<row_major, cpu>>) -> tensor<?x64xf32, #kiln.enc<row_major, cpu, [s1]>>
  %5 = kiln.reshape %pos {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (1, s1, 64)>} : (tensor<?x64xf32, #kiln.enc<row_major, cpu, [s1]>>) -> !pos
  %embedded = kiln.add %x, %5 : (!x, !pos) -> !x
  // A softmax over the dynamic axis: its row's length is read per run.
  %6 = kiln.reduce_sum %x {axes = array<i64: 2>, keepdims = false} : (!x) -> !s
  %probs = kiln.softmax %6 {axis = 1 : i64} : (!s) -> !s
  // A mask per batch row broadcast over heads and queries ([s0, 1, 1, s1]
  // onto [s0, 2, s1, s1]), elementwise: rows of one element, a row group
  // (read row (r / (2 * seq * seq)) * seq + r % seq).
  %7 = kiln.reshape %6 {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, 1, 1, s1)>} : (!s) -> tensor<?x1x1x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %8 = kiln.broadcast %7 {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, 2, s1, s1)>} : (tensor<?x1x1x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>) -> !scores
  %masked = kiln.relu %8 : (!scores) -> !scores
  // The same mask added before a softmax over the keys: rows of the keys,
  // the mask's row r / (2 * seq) of the run's (a row group whose size is
  // read per run).
  %9 = kiln.add %sc, %7 : (!scores, tensor<?x1x1x?xf32, #kiln.enc<row_major, cpu, [s0, s1]>>) -> !scores
  %attention = kiln.softmax %9 {axis = 3 : i64} : (!scores) -> !scores
  // A mask compared with zero and selected, as exporters write it.
  %zero = kiln.constant dense<0> : tensor<i64> : tensor<i64, #kiln.enc<row_major, cpu>>
  %ninf = kiln.constant dense<-1.0e4> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %10 = kiln.eq %mask, %zero : (!m, tensor<i64, #kiln.enc<row_major, cpu>>) -> tensor<?x?xi1, #kiln.enc<row_major, cpu, [s0, s1]>>
  %selected = kiln.select %10, %ninf, %6 : (tensor<?x?xi1, #kiln.enc<row_major, cpu, [s0, s1]>>, tensor<f32, #kiln.enc<row_major, cpu>>, !s) -> !s
  // A [batch, 1, seq, seq] mask: blocks of seq rows, one per group of
  // heads (read row (r / (2 * seq)) * seq + r % seq).
  %11 = kiln.add %sc, %square : (!scores, tensor<?x1x?x?xf32, #kiln.enc<row_major, cpu, [s0, s1, s1]>>) -> !scores
  %square_attention = kiln.softmax %11 {axis = 3 : i64} : (!scores) -> !scores
  // A value per (batch, query) broadcast over heads and a static last
  // dimension ([s0, 1, s1, 1] onto [s0, 2, s1, 3]): no read kind describes
  // it over rows of 3; not compiled (the host computes it).
  %12 = kiln.reshape %6 {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, 1, s1, 1)>} : (!s) -> tensor<?x1x?x1xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %13 = kiln.broadcast %12 {shape = array<i64>, sizes = affine_map<()[s0, s1] -> (s0, 2, s1, 3)>} : (tensor<?x1x?x1xf32, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x2x?x3xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  %spread = kiln.tanh %13 : (tensor<?x2x?x3xf32, #kiln.enc<row_major, cpu, [s0, s1]>>) -> tensor<?x2x?x3xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
  return %gelu, %pooled, %embedded, %probs, %masked, %attention, %selected, %square_attention, %spread : !h, !x, !x, !s, !scores, !scores, !s, !scores, tensor<?x2x?x3xf32, #kiln.enc<row_major, cpu, [s0, s1]>>
}
