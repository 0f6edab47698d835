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

// expected-error @+1 {{kiln tensors have static shapes}}
func.func @dynamic(%a: tensor<?x3xf32, #kiln.enc<row_major, cpu>>) {
  return
}
