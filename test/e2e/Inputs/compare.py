#!/usr/bin/env python3
"""compare.py ACTUAL.npy EXPECTED.npy [--rtol R] [--atol A]

Passes when |actual - expected| <= atol + rtol * |expected| everywhere, with
the same shape, NaNs in the same places, and the data not all zeros (a
check that cannot fail is no check). Prints the largest error either way.
"""
import argparse
import sys

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("actual")
parser.add_argument("expected")
parser.add_argument("--rtol", type=float, default=1e-4)
parser.add_argument("--atol", type=float, default=1e-5)
args = parser.parse_args()

actual = np.load(args.actual).astype(np.float64)
expected = np.load(args.expected).astype(np.float64)
if actual.shape != expected.shape:
    sys.exit(f"FAIL: shape {actual.shape} != expected {expected.shape}")
if not np.any(expected):
    sys.exit("FAIL: the expected values are all zero; the comparison would prove nothing")
nan = np.isnan(expected)
if not np.array_equal(nan, np.isnan(actual)):
    sys.exit("FAIL: NaNs in different places")
error = np.abs(actual - expected)[~nan]
bound = (args.atol + args.rtol * np.abs(expected))[~nan]
worst = float(np.max(error / bound)) if error.size else 0.0
print(f"max abs error {float(np.max(error)) if error.size else 0.0:.3g}, "
      f"{worst:.3f} of the tolerance (rtol={args.rtol}, atol={args.atol})")
sys.exit(0 if worst <= 1.0 else "FAIL: outside the tolerance")
