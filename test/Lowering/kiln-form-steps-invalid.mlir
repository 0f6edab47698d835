// RUN: not kiln-opt %s -kiln-form-steps 2>&1 | FileCheck %s

!s = tensor<f32, #kiln.enc<row_major, cpu>>

// A kiln.gradient stands for the ops computing its value; no step computes
// it, and passes run before its expansion may have changed those ops.
// CHECK: error: kiln.gradient must be expanded by kiln-expand-gradients before any other pass (kilnc runs it first)
func.func @unexpanded(%x: !s) -> !s {
  %y = kiln.mul %x, %x : (!s, !s) -> !s
  %g = kiln.gradient %y wrt %x : (!s, !s) -> !s
  return %g : !s
}
