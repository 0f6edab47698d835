"""ONNX models with a scalar loss, and the gradient of the loss with respect
to each initializer, by central differences of a NumPy forward pass in
float64 (independent of kiln's rules).

    gradients.py OUT_DIR

writes OUT_DIR/MODEL.onnx, OUT_DIR/MODEL/INPUT.npy and
OUT_DIR/MODEL/expected/{loss,grad.W}.npy for each model.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

OUT = sys.argv[1]
rng = np.random.default_rng(3)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def central_differences(forward, weights, eps=1e-6):
    """d forward / d w for each weight array (float64, perturbed in place)."""
    grads = {}
    for name, w in weights.items():
        g = np.zeros_like(w)
        for k in range(w.size):
            saved = w.flat[k]
            w.flat[k] = saved + eps
            up = forward()
            w.flat[k] = saved - eps
            down = forward()
            w.flat[k] = saved
            g.flat[k] = (up - down) / (2 * eps)
        grads[name] = g
    return grads


def save(name, nodes, inputs, weights, forward, constants={}, opset=17):
    """The model (weights as f32 initializers, integer constants beside
    them), its inputs and expected values."""
    graph = helper.make_graph(
        nodes, name, [vi(k, T.INT64 if v.dtype == np.int64 else T.FLOAT, list(v.shape))
                      for k, v in inputs.items()],
        [vi("loss", T.FLOAT, [])],
        [numpy_helper.from_array(w.astype(np.float32), k) for k, w in weights.items()] +
        [numpy_helper.from_array(c, k) for k, c in constants.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
              os.path.join(OUT, name + ".onnx"))
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "expected"), exist_ok=True)
    for k, v in inputs.items():
        np.save(os.path.join(d, k + ".npy"), v)
    # The forward pass at the weights kiln reads (rounded to f32).
    w64 = {k: w.astype(np.float32).astype(np.float64) for k, w in weights.items()}
    np.save(os.path.join(d, "expected", "loss.npy"),
            np.array(forward(w64), np.float32))
    for k, g in central_differences(lambda: forward(w64), w64).items():
        np.save(os.path.join(d, "expected", "grad." + k + ".npy"), g.astype(np.float32))


# An MLP regressor: matmul, bias, ReLU, matmul, mean squared error.
x = rng.standard_normal((8, 4)).astype(np.float32)
t = rng.standard_normal((8, 3)).astype(np.float32)
save("mlp", [
    helper.make_node("MatMul", ["x", "w1"], ["h0"]),
    helper.make_node("Add", ["h0", "b1"], ["h1"]),
    helper.make_node("Relu", ["h1"], ["h"]),
    helper.make_node("MatMul", ["h", "w2"], ["y"]),
    helper.make_node("Sub", ["y", "t"], ["d"]),
    helper.make_node("Mul", ["d", "d"], ["d2"]),
    helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)],
    {"x": x, "t": t},
    {"w1": rng.standard_normal((4, 16)) * 0.5, "b1": rng.standard_normal(16) * 0.1,
     "w2": rng.standard_normal((16, 3)) * 0.5},
    lambda w: np.mean((np.maximum(x @ w["w1"] + w["b1"], 0) @ w["w2"] - t) ** 2))


# A classifier: tanh and sigmoid layers, log-softmax cross entropy
# against one-hot targets (as PyTorch exports it).
x = rng.standard_normal((6, 5)).astype(np.float32)
onehot = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 6)]


def classifier(w):
    h = np.tanh(x @ w["w1"]) * (1 / (1 + np.exp(-(x @ w["wg"]))))
    z = h @ w["w2"] + w["b2"]
    logp = z - z.max(axis=1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(axis=1, keepdims=True))
    return -np.mean(np.sum(logp * onehot, axis=1))


save("classifier", [
    helper.make_node("MatMul", ["x", "w1"], ["a"]),
    helper.make_node("Tanh", ["a"], ["ta"]),
    helper.make_node("MatMul", ["x", "wg"], ["g"]),
    helper.make_node("Sigmoid", ["g"], ["sg"]),
    helper.make_node("Mul", ["ta", "sg"], ["h"]),
    helper.make_node("MatMul", ["h", "w2"], ["z0"]),
    helper.make_node("Add", ["z0", "b2"], ["z"]),
    helper.make_node("LogSoftmax", ["z"], ["logp"], axis=1),
    helper.make_node("Mul", ["logp", "onehot"], ["picked"]),
    helper.make_node("ReduceSum", ["picked", "axis1"], ["per_row"], keepdims=0),
    helper.make_node("ReduceMean", ["per_row"], ["mean"], keepdims=0),
    helper.make_node("Neg", ["mean"], ["loss"])],
    {"x": x, "onehot": onehot},
    {"w1": rng.standard_normal((5, 8)) * 0.5, "wg": rng.standard_normal((5, 8)) * 0.5,
     "w2": rng.standard_normal((8, 4)) * 0.5, "b2": rng.standard_normal(4) * 0.1},
    classifier, constants={"axis1": np.array([1], np.int64)})
