"""A gradient of a gradient through a convolution (second_order_conv.mlir)
against central differences of a NumPy float64 forward pass of the first
gradient, on random inputs; prints the largest error relative to the
largest magnitude.

Usage: second_order.py KILNC KILN_RUN MLIR OUT_DIR DEVICE
"""

import os
import subprocess
import sys

import numpy as np

KILNC, KILN_RUN, MLIR, OUT, DEVICE = sys.argv[1:6]
rng = np.random.default_rng(3)
x = rng.standard_normal((1, 1, 5, 5)).astype(np.float32)
w = rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
np.save(os.path.join(OUT, "x.npy"), x)
np.save(os.path.join(OUT, "w.npy"), w)


def t_of(x, w):
    """|d/dw sum(y^2)|^2 for y the valid convolution of x with w."""
    y = np.array([[np.sum(x[0, 0, i:i + 3, j:j + 3] * w[0, 0]) for j in range(3)]
                  for i in range(3)])
    gw = sum(2 * y[i, j] * x[0, 0, i:i + 3, j:j + 3] for i in range(3) for j in range(3))
    return np.sum(gw * gw)


x64, w64, eps = x.astype(np.float64), w.astype(np.float64), 1e-6
expected = np.zeros_like(x64)
for k in range(x64.size):
    up, down = x64.copy(), x64.copy()
    up.flat[k] += eps
    down.flat[k] -= eps
    expected.flat[k] = (t_of(up, w64) - t_of(down, w64)) / (2 * eps)

exe, out = os.path.join(OUT, f"second-{DEVICE}.kx"), os.path.join(OUT, f"out-{DEVICE}")
subprocess.run([KILNC, MLIR, f"--target={DEVICE}", "-o", exe], check=True, capture_output=True)
subprocess.run([KILN_RUN, exe, f"--device={DEVICE}", "--input", f"input0={OUT}/x.npy",
                "--input", f"input1={OUT}/w.npy", "--output-dir", out],
               check=True, capture_output=True)
got = np.load(os.path.join(out, "output0.npy"))
error = float(np.max(np.abs(got - expected)) / np.max(np.abs(expected)))
print(f"second derivative through a convolution on {DEVICE}: "
      f"{'agrees' if error < 1e-4 else 'DIFFERS'} (largest error {error:.1e} of the magnitude)")
