// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{layout perm[1, 0] has 2 dimensions but the tensor has rank 3}}
func.func @rank_mismatch(%a: tensor<2x3x4xf32, #kiln.enc<perm[1, 0], cpu>>) {
  return
}

// -----

// expected-error @+1 {{layout must be a permutation of its dimensions}}
func.func @not_a_permutation(%a: tensor<2x3xf32, #kiln.enc<perm[0, 0], cpu>>) {
  return
}

// -----

// expected-error @+1 {{unknown layout 'diagonal'}}
func.func @unknown_layout(%a: tensor<2x3xf32, #kiln.enc<diagonal, cpu>>) {
  return
}

// -----

// expected-error @+1 {{unknown device 'tpu'}}
func.func @unknown_device(%a: tensor<2x3xf32, #kiln.enc<row_major, tpu>>) {
  return
}

// -----

// expected-error @+1 {{layout nhwc has 4 dimensions but the tensor has rank 2}}
func.func @nhwc_on_matrix(%a: tensor<2x3xf32, #kiln.enc<nhwc, cpu>>) {
  return
}

// -----

// A dynamic dimension needs its symbolic size.
// expected-error @+1 {{the tensor has 1 dynamic dimensions but its encoding gives 0 symbolic sizes}}
func.func @dynamic_without_size(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu>>) {
  return
}

// -----

// expected-error @+1 {{the tensor has 1 dynamic dimensions but its encoding gives 2 symbolic sizes}}
func.func @too_many_sizes(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu, [s0, s1]>>) {
  return
}

// -----

// expected-error @+1 {{symbolic size 4 is a constant; write it as a static dimension}}
func.func @constant_size(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu, [4]>>) {
  return
}

// -----

// Sizes are written over the symbols s0..s255 only.
// expected-error @+1 {{use of undeclared identifier}}
func.func @dimension_identifier(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu, [d0]>>) {
  return
}

// -----

// expected-error @+1 {{symbolic size s1 names a symbol the model does not list in 'kiln.symbols' (1 symbols)}}
func.func @unlisted_symbol(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu, [s1]>>)
    attributes {kiln.symbols = [{name = "batch", min = 1, max = 8, opt = 1}]} {
  return
}

// -----

// expected-error @+1 {{size symbol s0 ('batch') needs 0 <= min <= opt <= max, got 8..1:1}}
func.func @empty_range(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu, [s0]>>)
    attributes {kiln.symbols = [{name = "batch", min = 8, max = 1, opt = 1}]} {
  return
}

// -----

// expected-error @+1 {{size symbol 'batch' is named twice}}
func.func @duplicate_symbol(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu, [s0]>>)
    attributes {kiln.symbols = [{name = "batch", min = 1, max = 8, opt = 1},
                                {name = "batch", min = 1, max = 8, opt = 1}]} {
  return
}

// -----

// expected-error @+1 {{size symbol s0 must be {name, min, max, opt}}}
func.func @incomplete_symbol(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu, [s0]>>)
    attributes {kiln.symbols = [{name = "batch", min = 1}]} {
  return
}
