#!/usr/bin/env python3
"""cpu-elementwise.test's two halves:
    elementwise_check.py inputs DIR   writes x.npy and y.npy: random values
        at four scales, and the special ones (zeros of both signs,
        infinities, NaN, subnormals, the edges of exp's range, large and
        tiny magnitudes)
    elementwise_check.py compare CPU REF X   compares every output of the
        compiled kernels (CPU) with the reference evaluator's (REF): NaN and
        infinities in the same places, and the error in units in the last
        place (ulp of the reference's f32) within each op's bound, or for
        the row reductions (r_*) within ROW_TOLERANCE; prints one line per
        output, and exits 1 on any excess."""
import glob
import os
import sys

import numpy as np

# Correctly rounded ops are exact; exp, log, tanh, erf and sigmoid are
# MLIR's polynomials (docs/codegen.md). GELU's bound in ulp holds for
# x >= 0; for negative x, 1 + erf(x / sqrt 2) cancels in f32 (as in any f32
# GELU of that form: 8 bits lost at x = -3), and the error is bounded
# absolutely instead: |x| * 2^-23, two roundings of the sum near 0.
ULP = {"neg": 0, "abs": 0, "add": 0, "sub": 0, "mul": 0, "div": 0, "max": 0, "min": 0,
       "relu": 0, "sign": 0, "sqrt": 0, "rsqrt": 1, "exp": 4, "log": 2, "tanh": 4, "erf": 4,
       "sigmoid": 2, "gelu": 8}

if sys.argv[1] == "inputs":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 1000)).astype(np.float32)
    x *= np.array([[1], [10], [100], [0.001]], np.float32)
    special = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 88.7, 88.8,
                        -87.3, -100, -103.9, -104, 1e30, -1e30, 1e-30, 9, -9, 20, -20, 3.9,
                        -3.9, 0.5, -0.5], np.float32)
    x[0, :len(special)] = special
    y = rng.standard_normal((4, 1000)).astype(np.float32)
    y[0, :len(special)] = special[::-1]
    np.save(os.path.join(sys.argv[2], "x.npy"), x)
    np.save(os.path.join(sys.argv[2], "y.npy"), y)
    sys.exit(0)

# Row reductions sum in f32 (reassociated, so vectorised) where the
# reference sums in double: within 1e-5 relative and 1e-5 absolute.
ROW_TOLERANCE = 1e-5

cpu_dir, ref_dir = sys.argv[2], sys.argv[3]
x = np.load(sys.argv[4]).astype(np.float64)
failed = False
for path in sorted(glob.glob(os.path.join(cpu_dir, "o_*.npy"))):
    op = os.path.basename(path)[2:-4]
    a = np.load(path).astype(np.float64)
    b = np.load(os.path.join(ref_dir, os.path.basename(path))).astype(np.float64)
    places = (np.isnan(a) != np.isnan(b)) | (np.isinf(a) != np.isinf(b)) | \
        (np.isinf(b) & (np.sign(a) != np.sign(b)))
    finite = np.isfinite(a) & np.isfinite(b)
    spacing = np.spacing(np.abs(b[finite]).astype(np.float32)).astype(np.float64)
    ulp = np.abs(a[finite] - b[finite]) / spacing
    if op == "gelu":
        xs = x[finite]
        within = np.abs(a[finite] - b[finite]) <= np.abs(xs) * 2.0**-23
        ulp = np.where((xs < 0) & within, 0, ulp)
    worst = ulp.max() if ulp.size else 0
    ok = not places.any() and worst <= ULP[op]
    failed |= not ok
    print(f"{op}: {'ok' if ok else 'FAIL'}: max {worst:.0f} ulp (bound {ULP[op]}), "
          f"{int(places.sum())} NaN/inf mismatches")
for path in sorted(glob.glob(os.path.join(cpu_dir, "r_*.npy"))):
    op = os.path.basename(path)[2:-4]
    a = np.load(path).astype(np.float64)
    b = np.load(os.path.join(ref_dir, os.path.basename(path))).astype(np.float64)
    places = (np.isnan(a) != np.isnan(b)) | (np.isinf(a) != np.isinf(b))
    finite = np.isfinite(a) & np.isfinite(b)
    error = np.abs(a[finite] - b[finite]) / (ROW_TOLERANCE + ROW_TOLERANCE * np.abs(b[finite]))
    worst = error.max() if error.size else 0
    ok = not places.any() and worst <= 1
    failed |= not ok
    print(f"{op}: {'ok' if ok else 'FAIL'}: {worst:.3f} of the tolerance, "
          f"{int(places.sum())} NaN/inf mismatches")
sys.exit(1 if failed else 0)
