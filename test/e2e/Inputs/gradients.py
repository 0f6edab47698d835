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

from regression_mlp import regression_mlp_nodes

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
save("mlp", regression_mlp_nodes(),
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


# An encoder block as exporters write it: an embedding gather, layer norm,
# single-head attention (a scaled q k^T, softmax, times v), an FFN with
# Erf GELU, a residual and a mean-square loss.
ids = rng.integers(0, 10, 6).astype(np.int64)


def erf(v):
    from math import erf as scalar_erf
    return np.vectorize(scalar_erf)(v)


def encoder(w):
    x = w["emb"][ids]
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    n = (x - mu) / np.sqrt(var + 1e-5) * w["ln_scale"] + w["ln_bias"]
    q, k, v = n @ w["wq"], n @ w["wk"], n @ w["wv"]
    s = q @ k.T / np.sqrt(8.0)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p = p / p.sum(axis=1, keepdims=True)
    a = p @ v
    h = a @ w["w1"]
    f = 0.5 * h * (1 + erf(h / np.sqrt(2))) @ w["w2"]
    out = x + f
    return np.mean(out * out)


save("encoder", [
    helper.make_node("Gather", ["emb", "ids"], ["x"], axis=0),
    helper.make_node("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["n"], axis=-1,
                     epsilon=1e-5),
    helper.make_node("MatMul", ["n", "wq"], ["q"]),
    helper.make_node("MatMul", ["n", "wk"], ["k"]),
    helper.make_node("MatMul", ["n", "wv"], ["v"]),
    helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
    helper.make_node("MatMul", ["q", "kt"], ["s0"]),
    helper.make_node("Div", ["s0", "scale"], ["s"]),
    helper.make_node("Softmax", ["s"], ["p"], axis=-1),
    helper.make_node("MatMul", ["p", "v"], ["a"]),
    helper.make_node("MatMul", ["a", "w1"], ["h"]),
    helper.make_node("Div", ["h", "sqrt2"], ["hs"]),
    helper.make_node("Erf", ["hs"], ["e"]),
    helper.make_node("Add", ["e", "one"], ["e1"]),
    helper.make_node("Mul", ["h", "e1"], ["he"]),
    helper.make_node("Mul", ["he", "half"], ["gelu"]),
    helper.make_node("MatMul", ["gelu", "w2"], ["f"]),
    helper.make_node("Add", ["x", "f"], ["out"]),
    helper.make_node("Mul", ["out", "out"], ["sq"]),
    helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0)],
    {"ids": ids},
    {"emb": rng.standard_normal((10, 8)) * 0.5, "ln_scale": 1 + rng.standard_normal(8) * 0.1,
     "ln_bias": rng.standard_normal(8) * 0.1, "wq": rng.standard_normal((8, 8)) * 0.4,
     "wk": rng.standard_normal((8, 8)) * 0.4, "wv": rng.standard_normal((8, 8)) * 0.4,
     "w1": rng.standard_normal((8, 16)) * 0.4, "w2": rng.standard_normal((16, 8)) * 0.4},
    encoder,
    constants={"scale": np.array(np.sqrt(8.0), np.float32),
               "sqrt2": np.array(np.sqrt(2.0), np.float32),
               "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32)})


# A small CNN: a strided, padded convolution with bias, batch norm (its
# scale, bias, mean and variance all weights), ReLU, a dilated convolution,
# global average pooling and a linear layer.
img = rng.standard_normal((2, 2, 9, 9)).astype(np.float32)
target = rng.standard_normal((2, 3)).astype(np.float32)


def conv2d(x, w, stride, pad, dilation):
    """NCHW x OIHW, padding [top, left, bottom, right], one group."""
    x = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    r, s = w.shape[2:]
    p = (x.shape[2] - (r - 1) * dilation[0] - 1) // stride[0] + 1
    q = (x.shape[3] - (s - 1) * dilation[1] - 1) // stride[1] + 1
    out = np.zeros((x.shape[0], w.shape[0], p, q))
    for i in range(r):
        for j in range(s):
            window = x[:, :, i * dilation[0]:i * dilation[0] + (p - 1) * stride[0] + 1:stride[0],
                       j * dilation[1]:j * dilation[1] + (q - 1) * stride[1] + 1:stride[1]]
            out += np.einsum("ncpq,kc->nkpq", window, w[:, :, i, j])
    return out


def cnn(w):
    y = conv2d(img, w["k1"], (2, 2), (1, 1, 1, 1), (1, 1)) + w["c1b"].reshape(1, -1, 1, 1)
    per = lambda v: v.reshape(1, -1, 1, 1)
    y = (y - per(w["bn_mean"])) / np.sqrt(per(w["bn_var"]) + 1e-5) * per(w["bn_scale"]) + \
        per(w["bn_bias"])
    y = conv2d(np.maximum(y, 0), w["k2"], (1, 1), (0, 0, 0, 0), (2, 2))
    z = y.mean(axis=(2, 3)) @ w["fc"]
    return np.mean((z - target) ** 2)


save("cnn", [
    helper.make_node("Conv", ["img", "k1", "c1b"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                     ["bn"], epsilon=1e-5),
    helper.make_node("Relu", ["bn"], ["r1"]),
    helper.make_node("Conv", ["r1", "k2"], ["c2"], dilations=[2, 2]),
    helper.make_node("GlobalAveragePool", ["c2"], ["pooled"]),
    helper.make_node("Flatten", ["pooled"], ["flat"]),
    helper.make_node("MatMul", ["flat", "fc"], ["z"]),
    helper.make_node("Sub", ["z", "target"], ["d"]),
    helper.make_node("Mul", ["d", "d"], ["d2"]),
    helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)],
    {"img": img, "target": target},
    {"k1": rng.standard_normal((4, 2, 3, 3)) * 0.4, "c1b": rng.standard_normal(4) * 0.1,
     "bn_scale": 1 + rng.standard_normal(4) * 0.1, "bn_bias": rng.standard_normal(4) * 0.1,
     "bn_mean": rng.standard_normal(4) * 0.1, "bn_var": 1 + rng.random(4) * 0.5,
     "k2": rng.standard_normal((3, 4, 2, 2)) * 0.4, "fc": rng.standard_normal((3, 3)) * 0.5},
    cnn)


# Linear layers as PyTorch exports them (Gemm transB=1; one with transA=1
# as well), a batched product [2, 3, 4] x [4, 5] against a shared weight,
# a weight used twice, and a convolution whose windows leave the last rows
# and columns of the padded image unread.
x = rng.standard_normal((6, 4)).astype(np.float32)
img = rng.standard_normal((1, 2, 10, 10)).astype(np.float32)


def layers(w):
    h = np.tanh(x @ w["fc1"].T + w["fc1_b"])            # Gemm transB
    h2 = (h.T).T @ w["fc2"].T                            # Gemm transA, transB
    batched = h2.reshape(2, 3, 4) @ w["shared"]          # [2, 3, 4] x [4, 5]
    twice = batched * w["gain"] + w["gain"]              # gain used twice
    c = conv2d(img, w["k"], (2, 2), (1, 0, 0, 1), (2, 2))
    return np.mean(twice ** 2) + np.mean(np.tanh(c))


save("layers", [
    helper.make_node("Gemm", ["x", "fc1", "fc1_b"], ["g1"], transB=1),
    helper.make_node("Tanh", ["g1"], ["h"]),
    helper.make_node("Transpose", ["h"], ["ht"], perm=[1, 0]),
    helper.make_node("Gemm", ["ht", "fc2"], ["h2"], transA=1, transB=1),
    helper.make_node("Reshape", ["h2", "shape3"], ["h3"]),
    helper.make_node("MatMul", ["h3", "shared"], ["batched"]),
    helper.make_node("Mul", ["batched", "gain"], ["scaled"]),
    helper.make_node("Add", ["scaled", "gain"], ["twice"]),
    helper.make_node("Mul", ["twice", "twice"], ["sq"]),
    helper.make_node("ReduceMean", ["sq"], ["m1"], keepdims=0),
    helper.make_node("Conv", ["img", "k"], ["c"], strides=[2, 2], pads=[1, 0, 0, 1],
                     dilations=[2, 2]),
    helper.make_node("Tanh", ["c"], ["tc"]),
    helper.make_node("ReduceMean", ["tc"], ["m2"], keepdims=0),
    helper.make_node("Add", ["m1", "m2"], ["loss"])],
    {"x": x, "img": img},
    {"fc1": rng.standard_normal((4, 4)) * 0.5, "fc1_b": rng.standard_normal(4) * 0.1,
     "fc2": rng.standard_normal((4, 4)) * 0.5, "shared": rng.standard_normal((4, 5)) * 0.5,
     "gain": 1 + rng.standard_normal(5) * 0.2, "k": rng.standard_normal((3, 2, 3, 2)) * 0.4},
    layers, constants={"shape3": np.array([2, 3, 4], np.int64)})


# Pooling as a ResNet stem and head write it: a convolution, max pooling
# (3x3, stride 2, padding 1), average pooling with padding that the count
# leaves out, and with padding it counts.
img = rng.standard_normal((2, 2, 9, 9)).astype(np.float32)


def pool(x, kernel, stride, pad, reduce, include_pad=True):
    value = -np.inf if reduce == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])), constant_values=value)
    ones = np.pad(np.ones_like(x), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    p = (xp.shape[2] - kernel[0]) // stride[0] + 1
    q = (xp.shape[3] - kernel[1]) // stride[1] + 1
    windows = [xp[:, :, i:i + (p - 1) * stride[0] + 1:stride[0], j:j + (q - 1) * stride[1] + 1:stride[1]]
               for i in range(kernel[0]) for j in range(kernel[1])]
    if reduce == "max":
        return np.max(windows, axis=0)
    count = kernel[0] * kernel[1] if include_pad else sum(
        ones[:, :, i:i + (p - 1) * stride[0] + 1:stride[0], j:j + (q - 1) * stride[1] + 1:stride[1]]
        for i in range(kernel[0]) for j in range(kernel[1]))
    return np.sum(windows, axis=0) / count


def pools(w):
    c = conv2d(img, w["k"], (1, 1), (1, 1, 1, 1), (1, 1))
    m = pool(c, (3, 3), (2, 2), (1, 1, 1, 1), "max")
    a = pool(m, (2, 2), (2, 2), (1, 1, 0, 0), "avg", include_pad=False)
    b = pool(m, (3, 3), (1, 1), (1, 1, 1, 1), "avg", include_pad=True)
    return np.mean(a ** 2) + np.mean(b * w["scale"])


save("pools", [
    helper.make_node("Conv", ["img", "k"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("MaxPool", ["c"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
                     pads=[1, 1, 1, 1]),
    helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[2, 2], strides=[2, 2],
                     pads=[1, 1, 0, 0], count_include_pad=0),
    helper.make_node("AveragePool", ["m"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                     count_include_pad=1),
    helper.make_node("Mul", ["a", "a"], ["a2"]),
    helper.make_node("ReduceMean", ["a2"], ["ma"], keepdims=0),
    helper.make_node("Mul", ["b", "scale"], ["bs"]),
    helper.make_node("ReduceMean", ["bs"], ["mb"], keepdims=0),
    helper.make_node("Add", ["ma", "mb"], ["loss"])],
    {"img": img},
    {"k": rng.standard_normal((3, 2, 3, 3)) * 0.4, "scale": 1 + rng.random(1) * 0.5},
    pools)


# The rules the models above do not reach, each once: pow, abs, sqrt, log,
# exp, sin, cos, min and max against operands broadcast from [3, 1] and
# [1, 4], where (select), concat, a slice, div by a weight, casts to f64 and
# back, reduce_max with keepdims, reduce_min over the leading axis, and layer
# norm over two axes without a bias. Constants are named k_* and left out of
# --trainable.
x = (rng.standard_normal((3, 4)) + 0.5).astype(np.float32)


def rules(w):
    u = x * w["a"]
    v = np.abs(u) + 1
    powered, root, logged = v ** 1.5, np.sqrt(v), np.log(v)
    waves = np.sin(u) + np.cos(u)
    low, high = np.minimum(u, w["b"]), np.maximum(u, w["c"])
    picked = np.where(u > 0, u, x * w["d"])
    cut = np.concatenate([powered, root], axis=1)[:, 2:6]
    ratio = logged / w["den"]
    doubled = np.exp(u * 0.1) * 2
    g = u.reshape(3, 2, 2)
    mu = g.mean(axis=(1, 2), keepdims=True)
    var = ((g - mu) ** 2).mean(axis=(1, 2), keepdims=True)
    normed = (g - mu) / np.sqrt(var + 1e-5) * w["ln_scale"]
    return (cut.mean() + (waves * picked).mean() + ratio.mean() + doubled.mean() +
            high.max(axis=1, keepdims=True).mean() + low.min(axis=0).mean() + (normed ** 2).mean())


def node(op, inputs, output, **attrs):
    return helper.make_node(op, inputs, [output], **attrs)


save("rules", [
    node("Mul", ["x", "a"], "u"), node("Abs", ["u"], "au"), node("Add", ["au", "k_one"], "v"),
    node("Pow", ["v", "k_power"], "powered"), node("Sqrt", ["v"], "root"),
    node("Log", ["v"], "logged"), node("Sin", ["u"], "sin"), node("Cos", ["u"], "cos"),
    node("Add", ["sin", "cos"], "waves"), node("Min", ["u", "b"], "low"),
    node("Max", ["u", "c"], "high"), node("Greater", ["u", "k_zero"], "positive"),
    node("Mul", ["x", "d"], "xd"), node("Where", ["positive", "u", "xd"], "picked"),
    node("Concat", ["powered", "root"], "cat", axis=1),
    node("Slice", ["cat", "k_starts", "k_ends", "k_axes"], "cut"),
    node("Div", ["logged", "den"], "ratio"), node("Mul", ["u", "k_tenth"], "tenth"),
    node("Exp", ["tenth"], "ex"), node("Cast", ["ex"], "wide", to=T.DOUBLE),
    node("Add", ["wide", "wide"], "twice"), node("Cast", ["twice"], "doubled", to=T.FLOAT),
    node("Reshape", ["u", "k_shape"], "g"),
    node("LayerNormalization", ["g", "ln_scale"], "normed", axis=1, epsilon=1e-5),
    node("ReduceMean", ["cut"], "t1", keepdims=0),
    node("Mul", ["waves", "picked"], "wp"), node("ReduceMean", ["wp"], "t2", keepdims=0),
    node("ReduceMean", ["ratio"], "t3", keepdims=0),
    node("ReduceMean", ["doubled"], "t4", keepdims=0),
    node("ReduceMax", ["high"], "rowmax", axes=[1], keepdims=1),
    node("ReduceMean", ["rowmax"], "t5", keepdims=0),
    node("ReduceMin", ["low"], "colmin", axes=[0], keepdims=0),
    node("ReduceMean", ["colmin"], "t6", keepdims=0),
    node("Mul", ["normed", "normed"], "n2"), node("ReduceMean", ["n2"], "t7", keepdims=0),
    node("Sum", ["t1", "t2", "t3", "t4", "t5", "t6", "t7"], "loss")],
    {"x": x},
    {"a": rng.standard_normal(4), "b": rng.standard_normal((3, 1)),
     "c": rng.standard_normal((1, 4)), "d": rng.standard_normal(4),
     "den": 1 + rng.random(4), "ln_scale": 1 + rng.standard_normal((2, 2)) * 0.1},
    rules,
    constants={"k_one": np.array(1, np.float32), "k_power": np.array(1.5, np.float32),
               "k_zero": np.array(0, np.float32), "k_tenth": np.array(0.1, np.float32),
               "k_starts": np.array([2], np.int64), "k_ends": np.array([6], np.int64),
               "k_axes": np.array([1], np.int64), "k_shape": np.array([3, 2, 2], np.int64)},
    opset=17)


# The rules of the ops the models above do not reach: tan, the inverse
# and hyperbolic trigonometric functions, fmod, padding,
# GatherElements, ScatterElements (assigning, with a repeated index whose
# last update wins, and adding), ReduceProd over rows with no, one and two
# zeros (the product of the others, exactly) and over columns keeping
# their dimension, and slices with steps of 2 and 3, one stopping short of
# the end and one backwards.
def more_rules(w):
    # (Through an input, so that constant folding leaves the work to the
    # executable.)
    p, m, z, s = w["p"] + 0.01 * shift, w["m"], w["z"] * ones[0], w["s"] * ones[0]
    acq = p * p + 1.5
    trig = (np.tan(p * 0.5) + np.arcsin(p) + np.arccos(p) + np.arctan(p) + np.sinh(p) +
            np.cosh(p) + np.arcsinh(p) + np.arctanh(p) + np.arccosh(acq))
    remainder = np.fmod(p * 3, m)
    padded = np.pad(p, [(1, 0), (0, 2)])
    gathered = np.take_along_axis(p, gather_idx, axis=1)
    assigned = p.copy()
    for i in range(scatter_idx.shape[0]):  # in order: the last of duplicates wins
        for j in range(scatter_idx.shape[1]):
            assigned[scatter_idx[i, j], j] = w["u"][i, j]
    added = p.copy()
    for i in range(add_idx.shape[0]):
        for j in range(add_idx.shape[1]):
            added[add_idx[i, j], j] += w["u"][i, j]
    prods = z.prod(axis=1)
    column_prods = z.prod(axis=0, keepdims=True)
    strided = s[1:5:2, 0:7:3]
    short = s[0:3:2, 1:6:2]
    backwards = s[:, ::-2]
    parts = [trig, remainder, padded, gathered, assigned, added, strided, short, backwards]
    return (sum(np.mean(part * part) for part in parts) + np.mean(prods * prod_weights) +
            np.mean(column_prods * column_prods))


gather_idx = np.array([[0, 3], [2, 2], [1, 0]], np.int64)
scatter_idx = np.array([[2, 0, 1, 2], [2, 1, 2, 1]], np.int64)
add_idx = np.array([[2, 0, 1, 1], [2, 1, 1, 0]], np.int64)
z = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1, 1], (3, 4))
z[0, 1] = 0
z[1, 0] = z[1, 2] = 0
shift = rng.standard_normal((3, 4)).astype(np.float32)
ones = np.ones(1, np.float32)
prod_weights = np.array([1.3, -0.7, 0.9], np.float32)
save("more_rules", [
    node("Mul", ["shift", "k_hundredth"], "ds"), node("Add", ["p_w", "ds"], "p"),
    node("Mul", ["z_w", "ones"], "z"), node("Mul", ["s_w", "ones"], "s"),
    node("Mul", ["p", "k_half"], "ph"), node("Tan", ["ph"], "tan"), node("Asin", ["p"], "asin"),
    node("Acos", ["p"], "acos"), node("Atan", ["p"], "atan"), node("Sinh", ["p"], "sinh"),
    node("Cosh", ["p"], "cosh"), node("Asinh", ["p"], "asinh"), node("Atanh", ["p"], "atanh"),
    node("Mul", ["p", "p"], "pp"), node("Add", ["pp", "k_one_half"], "acq"),
    node("Acosh", ["acq"], "acosh"),
    node("Sum", ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "acosh"],
         "trig"),
    node("Mul", ["p", "k_three"], "p3"), node("Mod", ["p3", "m"], "remainder", fmod=1),
    node("Pad", ["p", "k_pads"], "padded"),
    node("GatherElements", ["p", "k_gather"], "gathered", axis=1),
    node("ScatterElements", ["p", "k_scatter", "u"], "assigned", axis=0),
    node("ScatterElements", ["p", "k_add", "u"], "added", axis=0, reduction="add"),
    node("ReduceProd", ["z"], "prods", axes=[1], keepdims=0),
    node("ReduceProd", ["z"], "column_prods", axes=[0], keepdims=1),
    node("Slice", ["s", "k_sl_starts", "k_sl_ends", "k_sl_axes", "k_sl_steps"], "strided"),
    node("Slice", ["s", "k_sh_starts", "k_sh_ends", "k_sl_axes", "k_sl_steps_2"], "short"),
    node("Slice", ["s", "k_bw_starts", "k_bw_ends", "k_bw_axes", "k_bw_steps"], "backwards")] +
    [n for i, part in enumerate(["trig", "remainder", "padded", "gathered", "assigned", "added",
                                 "strided", "short", "backwards", "column_prods"])
     for n in (node("Mul", [part, part], f"sq{i}"),
               node("ReduceMean", [f"sq{i}"], f"m{i}", keepdims=0))] +
    [node("Mul", ["prods", "k_prod_weights"], "wprods"),
     node("ReduceMean", ["wprods"], "m10", keepdims=0),
     node("Sum", [f"m{i}" for i in range(11)], "loss")],
    {"shift": shift, "ones": ones},
    {"p_w": rng.uniform(-0.75, 0.75, (3, 4)), "m": rng.uniform(0.7, 1.3, 4),
     "u": rng.standard_normal((2, 4)), "z_w": z, "s_w": rng.standard_normal((5, 7))},
    lambda w: more_rules({"p": w["p_w"], "m": w["m"], "u": w["u"], "z": w["z_w"],
                          "s": w["s_w"]}),
    constants={"k_half": np.array(0.5, np.float32), "k_hundredth": np.array(0.01, np.float32),
               "k_prod_weights": prod_weights, "k_one_half": np.array(1.5, np.float32),
               "k_three": np.array(3, np.float32),
               "k_pads": np.array([1, 0, 0, 2], np.int64), "k_gather": gather_idx,
               "k_scatter": scatter_idx, "k_add": add_idx,
               "k_sl_starts": np.array([1, 0], np.int64), "k_sl_ends": np.array([5, 7], np.int64),
               "k_sl_axes": np.array([0, 1], np.int64), "k_sl_steps": np.array([2, 3], np.int64),
               "k_sh_starts": np.array([0, 1], np.int64), "k_sh_ends": np.array([3, 6], np.int64),
               "k_sl_steps_2": np.array([2, 2], np.int64),
               "k_bw_starts": np.array([-1], np.int64), "k_bw_ends": np.array([-1000], np.int64),
               "k_bw_axes": np.array([1], np.int64), "k_bw_steps": np.array([-2], np.int64)},
    opset=17)


# Grouped convolutions: two groups of 2 input and 3 output channels,
# padded, then three groups of 2 and 1, strided and dilated, with a bias,
# then a depthwise one; the image scaled by a weight first, so that the
# input's adjoint of each is checked too.
group_img = rng.standard_normal((2, 4, 9, 9)).astype(np.float32)


def grouped_conv2d(x, w, groups, stride, pad, dilation):
    cg, kg = x.shape[1] // groups, w.shape[0] // groups
    return np.concatenate([conv2d(x[:, i * cg:(i + 1) * cg], w[i * kg:(i + 1) * kg], stride, pad,
                                  dilation) for i in range(groups)], axis=1)


def grouped(w):
    y = grouped_conv2d(group_img * w["scale"].reshape(1, -1, 1, 1), w["g1"], 2, (1, 1),
                       (1, 1, 1, 1), (1, 1))
    y = np.tanh(y)
    y = grouped_conv2d(y, w["g2"], 3, (2, 1), (0, 1, 0, 1), (2, 1)) + w["g2b"].reshape(1, -1, 1, 1)
    y = grouped_conv2d(y, w["g3"], 3, (1, 1), (1, 1, 1, 1), (1, 1))
    return np.mean(y * y)


save("grouped", [
    node("Mul", ["img", "scale"], "scaled"),
    node("Conv", ["scaled", "g1"], "c1", pads=[1, 1, 1, 1], group=2),
    node("Tanh", ["c1"], "t1"),
    node("Conv", ["t1", "g2", "g2b"], "c2", pads=[0, 1, 0, 1], group=3, strides=[2, 1],
         dilations=[2, 1]),
    node("Conv", ["c2", "g3"], "c3", pads=[1, 1, 1, 1], group=3),
    node("Mul", ["c3", "c3"], "sq"), node("ReduceMean", ["sq"], "loss", keepdims=0)],
    {"img": group_img},
    {"scale": (1 + rng.standard_normal(4) * 0.1).reshape(4, 1, 1),
     "g1": rng.standard_normal((6, 2, 3, 3)) * 0.4, "g2": rng.standard_normal((3, 2, 3, 3)) * 0.4,
     "g2b": rng.standard_normal(3) * 0.1, "g3": rng.standard_normal((3, 1, 3, 3)) * 0.4},
    grouped)


# Pooling with ceil_mode: the last windows overhang the padded input, and
# those taps count for nothing (neither maximum nor divisor), as the
# reference takes them.
def ceil_pool(x, kernel, stride, pad, reduce, include_pad):
    h, w = x.shape[2:]
    hp, wp = h + pad[0] + pad[2], w + pad[1] + pad[3]
    p = -(-(hp - kernel[0]) // stride[0]) + 1
    q = -(-(wp - kernel[1]) // stride[1]) + 1
    out = np.zeros(x.shape[:2] + (p, q))
    for i in range(p):
        for j in range(q):
            rows = [r for r in range(i * stride[0] - pad[0], i * stride[0] - pad[0] + kernel[0])
                    if r < h + pad[2]]
            cols = [c for c in range(j * stride[1] - pad[1], j * stride[1] - pad[1] + kernel[1])
                    if c < w + pad[3]]
            inside_r = [r for r in rows if 0 <= r < h]
            inside_c = [c for c in cols if 0 <= c < w]
            taps = x[:, :, inside_r][:, :, :, inside_c]
            if reduce == "max":
                out[:, :, i, j] = taps.max(axis=(2, 3))
            else:
                count = len(rows) * len(cols) if include_pad else len(inside_r) * len(inside_c)
                out[:, :, i, j] = taps.sum(axis=(2, 3)) / count
    return out


ceil_img = rng.standard_normal((1, 2, 7, 7)).astype(np.float32)


def ceil_pools(w):
    c = conv2d(ceil_img, w["k"], (1, 1), (1, 1, 1, 1), (1, 1))
    m = ceil_pool(c, (2, 2), (2, 2), (0, 0, 0, 0), "max", True)
    a = ceil_pool(c, (3, 3), (2, 2), (1, 1, 0, 0), "avg", True)
    b = ceil_pool(c, (2, 2), (2, 2), (0, 0, 0, 0), "avg", False)
    return np.mean(m * m) + np.mean(a * a) + np.mean(b * b)


save("ceil_pools", [
    node("Conv", ["img", "k"], "c", pads=[1, 1, 1, 1]),
    node("MaxPool", ["c"], "m", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    node("AveragePool", ["c"], "a", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0],
         ceil_mode=1, count_include_pad=1),
    node("AveragePool", ["c"], "b", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    node("Mul", ["m", "m"], "m2"), node("ReduceMean", ["m2"], "t1", keepdims=0),
    node("Mul", ["a", "a"], "a2"), node("ReduceMean", ["a2"], "t2", keepdims=0),
    node("Mul", ["b", "b"], "b2"), node("ReduceMean", ["b2"], "t3", keepdims=0),
    node("Sum", ["t1", "t2", "t3"], "loss")],
    {"img": ceil_img}, {"k": rng.standard_normal((2, 2, 3, 3)) * 0.4}, ceil_pools)


# Scatters that multiply have no derivative rule yet: differentiating
# through them is one error naming each such node (two here). No expected
# values.
scatter_graph = helper.make_graph(
    [helper.make_node("ScatterElements", ["data", "idx", "u"], ["s1"], name="scatter_a", axis=0,
                      reduction="mul"),
     helper.make_node("ScatterElements", ["s1", "idx", "u"], ["s2"], name="scatter_b", axis=0,
                      reduction="mul"),
     helper.make_node("ReduceMean", ["s2"], ["loss"], keepdims=0)],
    "scatters", [vi("data", T.FLOAT, [3, 4])], [vi("loss", T.FLOAT, [])],
    [numpy_helper.from_array(rng.standard_normal((2, 4)).astype(np.float32), "u"),
     numpy_helper.from_array(np.array([[0, 1, 2, 0], [2, 0, 1, 1]], np.int64), "idx")])
onnx.save(helper.make_model(scatter_graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(OUT, "mul_scatters.onnx"))
