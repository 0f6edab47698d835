"""A training step's reference: an MLP regressor (matmul, bias, ReLU, mean
squared error) trained for three steps with SGD, momentum and Adam, in
NumPy float64 with analytic gradients.

    training.py OUT_DIR

writes OUT_DIR/mlp.onnx, OUT_DIR/x.npy, OUT_DIR/t.npy and, per optimizer,
OUT_DIR/OPTIMIZER/ holding the outputs of the third step: the loss (before
its update) and every state after it (the weights, and the optimizer's
state named as kiln names it).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from regression_mlp import regression_mlp_nodes

OUT = sys.argv[1]
rng = np.random.default_rng(5)
x = rng.standard_normal((8, 4)).astype(np.float32)
t = rng.standard_normal((8, 3)).astype(np.float32)
initial = {"w1": (rng.standard_normal((4, 16)) * 0.5).astype(np.float32),
           "b1": (rng.standard_normal(16) * 0.1).astype(np.float32),
           "w2": (rng.standard_normal((16, 3)) * 0.5).astype(np.float32)}
graph = helper.make_graph(regression_mlp_nodes(),
    "mlp", [helper.make_tensor_value_info("x", T.FLOAT, [8, 4]),
            helper.make_tensor_value_info("t", T.FLOAT, [8, 3])],
    [helper.make_tensor_value_info("loss", T.FLOAT, [])],
    [numpy_helper.from_array(v, k) for k, v in initial.items()])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(OUT, "mlp.onnx"))
np.save(os.path.join(OUT, "x.npy"), x)
np.save(os.path.join(OUT, "t.npy"), t)


def loss_and_grads(w):
    xx, tt = x.astype(np.float64), t.astype(np.float64)
    h1 = xx @ w["w1"] + w["b1"]
    h = np.maximum(h1, 0)
    d = h @ w["w2"] - tt
    dy = 2 * d / d.size
    dh = (dy @ w["w2"].T) * (h1 > 0)
    return np.mean(d * d), {"w2": h.T @ dy, "w1": xx.T @ dh, "b1": dh.sum(axis=0)}


def train(optimizer, lr, steps=3, decay=0.0, mu=0.9, b1=0.9, b2=0.999, eps=1e-8):
    w = {k: v.astype(np.float64) for k, v in initial.items()}
    state = {k + s: np.zeros_like(v) for k, v in w.items() for s in (".velocity", ".m", ".v")}
    for step in range(1, steps + 1):
        loss, g = loss_and_grads(w)
        for k in w:
            gk = g[k] + decay * w[k]
            if optimizer == "sgd":
                w[k] = w[k] - lr * gk
            elif optimizer == "momentum":
                state[k + ".velocity"] = mu * state[k + ".velocity"] + gk
                w[k] = w[k] - lr * state[k + ".velocity"]
            else:
                state[k + ".m"] = b1 * state[k + ".m"] + (1 - b1) * gk
                state[k + ".v"] = b2 * state[k + ".v"] + (1 - b2) * gk * gk
                m_hat = state[k + ".m"] / (1 - b1 ** step)
                v_hat = state[k + ".v"] / (1 - b2 ** step)
                w[k] = w[k] - lr * m_hat / (np.sqrt(v_hat) + eps)
    out = {"loss": np.array(loss)}
    out.update(w)
    if optimizer == "momentum":
        out.update({k + ".velocity": state[k + ".velocity"] for k in w})
    if optimizer == "adam":
        out["adam.step"] = np.array(float(steps))
        out.update({k + s: state[k + s] for k in w for s in (".m", ".v")})
    d = os.path.join(OUT, optimizer)
    os.makedirs(d, exist_ok=True)
    for k, v in out.items():
        np.save(os.path.join(d, k + ".npy"), v.astype(np.float32))


train("sgd", 0.1, decay=0.01)
train("momentum", 0.05)
train("adam", 0.01)
