"""Writes an ONNX LRN model of a given size, or compares kiln's output with
ONNX's formula: square_sum[n, c] = sum of x[n, i]^2 for i in
[c - floor((size-1)/2), c + ceil((size-1)/2)] within the channels;
y = x / (bias + alpha / size * square_sum) ** beta.

    lrn_check.py write MODEL.onnx SIZE [CHANNELS [ALPHA]]
    lrn_check.py check X.npy Y.npy SIZE [ALPHA]

ALPHA defaults to 2e-4, with which the window sum barely moves y; alpha =
size makes every channel in the window count, so a window off by one
channel fails the comparison."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

ALPHA, BETA, BIAS = 2e-4, 0.75, 1.0


def write(path, size, channels=3, alpha=ALPHA):
    """The model at `path`, and a random input beside it (x.npy)."""
    shape = [2, channels, 4, 4]
    np.save(path.rsplit("/", 1)[0] + "/x.npy", np.random.default_rng(5).standard_normal(shape).astype(np.float32))
    node = helper.make_node("LRN", ["x"], ["y"], name="lrn", size=size, alpha=alpha, beta=BETA, bias=BIAS)
    graph = helper.make_graph([node], "lrn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def check(x_path, y_path, size, alpha=ALPHA):
    alpha = float(np.float32(alpha))  # as the model stores it
    x = np.load(x_path).astype(np.float64)
    y = np.load(y_path)
    channels = x.shape[1]
    square = np.zeros_like(x)
    for c in range(channels):
        lo, hi = max(0, c - (size - 1) // 2), min(channels - 1, c + size - 1 - (size - 1) // 2)
        square[:, c] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    expected = x / (BIAS + alpha / size * square) ** BETA
    assert np.any(expected) and np.allclose(y, expected, rtol=1e-5, atol=1e-6), np.abs(y - expected).max()
    print("match")


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]), *map(int, sys.argv[4:5]), *map(float, sys.argv[5:6]))
    else:
        check(sys.argv[2], sys.argv[3], int(sys.argv[4]), *map(float, sys.argv[5:6]))
