"""A transformer encoder layer as PyTorch exports one, for the tests of
gradients: multi-head attention with an additive causal mask, Erf GELU,
two LayerNormalizations, a classifier head and softmax cross entropy over
one-hot targets. `save` writes the ONNX model and its inputs; `jax_loss`
is the same function in JAX (imported only when called), the independent
framework the gradients are checked against.
"""

import os

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper
import onnx

SEQ, WIDTH, HEADS, FFN, CLASSES = 32, 64, 4, 256, 10
# A causal mask, added to the scores (PyTorch's float attn_mask).
MASK = np.triu(np.full((SEQ, SEQ), -1e4, np.float32), 1)


def _weight(rng, *shape, scale=None):
    return (rng.standard_normal(shape) * (scale or 1 / np.sqrt(shape[0]))).astype(np.float32)


def node(op, inputs, output, name, **attrs):
    return helper.make_node(op, inputs, [output], name=name, **attrs)


def linear(scope, x, out):
    return [node("MatMul", [x, scope + ".weight"], out + "_mm", f"/{scope}/MatMul"),
            node("Add", [out + "_mm", scope + ".bias"], out, f"/{scope}/Add")]


def heads(scope, x, out):
    return [node("Reshape", [x, "heads_shape"], out + "_r", f"/attn/{scope}/Reshape"),
            node("Transpose", [out + "_r"], out, f"/attn/{scope}/Transpose", perm=[1, 0, 2])]


def save(out, rng):
    """Writes encoder_layer.onnx, x.npy and onehot.npy into `out`; returns
    the model's path and its trainable weights by name."""
    weights = {
        "ln1.weight": 1 + _weight(rng, WIDTH, scale=0.1),
        "ln1.bias": _weight(rng, WIDTH, scale=0.1),
        "q.weight": _weight(rng, WIDTH, WIDTH), "q.bias": _weight(rng, WIDTH, scale=0.1),
        "k.weight": _weight(rng, WIDTH, WIDTH), "k.bias": _weight(rng, WIDTH, scale=0.1),
        "v.weight": _weight(rng, WIDTH, WIDTH), "v.bias": _weight(rng, WIDTH, scale=0.1),
        "o.weight": _weight(rng, WIDTH, WIDTH), "o.bias": _weight(rng, WIDTH, scale=0.1),
        "ln2.weight": 1 + _weight(rng, WIDTH, scale=0.1),
        "ln2.bias": _weight(rng, WIDTH, scale=0.1),
        "fc1.weight": _weight(rng, WIDTH, FFN), "fc1.bias": _weight(rng, FFN, scale=0.1),
        "fc2.weight": _weight(rng, FFN, WIDTH), "fc2.bias": _weight(rng, WIDTH, scale=0.1),
        "head.weight": _weight(rng, WIDTH, CLASSES),
    }
    constants = {
        "mask": MASK, "scale": np.array(np.sqrt(WIDTH // HEADS), np.float32),
        "sqrt2": np.array(np.sqrt(2.0), np.float32), "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
        "heads_shape": np.array([SEQ, HEADS, WIDTH // HEADS], np.int64),
        "flat_shape": np.array([SEQ, WIDTH], np.int64),
    }

    nodes = [node("LayerNormalization", ["x", "ln1.weight", "ln1.bias"], "n1", "/ln1/LayerNorm",
                  axis=-1, epsilon=1e-5)]
    for p in "qkv":
        nodes += linear(p, "n1", p) + heads(p + "_heads", p, p + "h")
    nodes += [
        node("Transpose", ["kh"], "kt", "/attn/Transpose", perm=[0, 2, 1]),
        node("MatMul", ["qh", "kt"], "s0", "/attn/MatMul"),
        node("Div", ["s0", "scale"], "s1", "/attn/Div"),
        node("Add", ["s1", "mask"], "s", "/attn/Add"),
        node("Softmax", ["s"], "p", "/attn/Softmax", axis=-1),
        node("MatMul", ["p", "vh"], "ah", "/attn/MatMul_1"),
        node("Transpose", ["ah"], "at", "/attn/Transpose_1", perm=[1, 0, 2]),
        node("Reshape", ["at", "flat_shape"], "a", "/attn/Reshape"),
    ] + linear("o", "a", "o") + [
        node("Add", ["x", "o"], "r1", "/Add"),
        node("LayerNormalization", ["r1", "ln2.weight", "ln2.bias"], "n2", "/ln2/LayerNorm",
             axis=-1, epsilon=1e-5),
    ] + linear("fc1", "n2", "h") + [
        node("Div", ["h", "sqrt2"], "hs", "/gelu/Div"),
        node("Erf", ["hs"], "e", "/gelu/Erf"),
        node("Add", ["e", "one"], "e1", "/gelu/Add"),
        node("Mul", ["h", "e1"], "he", "/gelu/Mul"),
        node("Mul", ["he", "half"], "g", "/gelu/Mul_1"),
    ] + linear("fc2", "g", "f") + [
        node("Add", ["r1", "f"], "r2", "/Add_1"),
        node("MatMul", ["r2", "head.weight"], "logits", "/head/MatMul"),
        node("LogSoftmax", ["logits"], "logp", "/loss/LogSoftmax", axis=-1),
        node("Mul", ["logp", "onehot"], "picked", "/loss/Mul"),
        node("ReduceSum", ["picked"], "nll", "/loss/ReduceSum", keepdims=0),
        node("Neg", ["nll"], "total", "/loss/Neg"),
        node("Div", ["total", "seq"], "loss", "/loss/Div"),
    ]
    constants["seq"] = np.array(SEQ, np.float32)
    graph = helper.make_graph(
        nodes, "encoder_layer",
        [helper.make_tensor_value_info("x", T.FLOAT, [SEQ, WIDTH]),
         helper.make_tensor_value_info("onehot", T.FLOAT, [SEQ, CLASSES])],
        [helper.make_tensor_value_info("loss", T.FLOAT, [])],
        [numpy_helper.from_array(v, k) for k, v in {**weights, **constants}.items()])
    model = os.path.join(out, "encoder_layer.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    np.save(os.path.join(out, "x.npy"), rng.standard_normal((SEQ, WIDTH)).astype(np.float32))
    np.save(os.path.join(out, "onehot.npy"),
            np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, SEQ)])
    return model, weights


def jax_loss(w, x, onehot):
    """The same loss in JAX, from the weights by name."""
    import jax
    import jax.numpy as jnp

    def layer_norm(v, scale, bias):
        mu = v.mean(axis=-1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=-1, keepdims=True)
        return (v - mu) / jnp.sqrt(var + 1e-5) * scale + bias

    def heads(v):
        return v.reshape(SEQ, HEADS, WIDTH // HEADS).transpose(1, 0, 2)

    n1 = layer_norm(x, w["ln1.weight"], w["ln1.bias"])
    q, k, v = (heads(n1 @ w[p + ".weight"] + w[p + ".bias"]) for p in "qkv")
    s = q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(WIDTH // HEADS)) + MASK
    a = (jax.nn.softmax(s, axis=-1) @ v).transpose(1, 0, 2).reshape(SEQ, WIDTH)
    r1 = x + a @ w["o.weight"] + w["o.bias"]
    h = layer_norm(r1, w["ln2.weight"], w["ln2.bias"]) @ w["fc1.weight"] + w["fc1.bias"]
    g = h * (jax.scipy.special.erf(h / np.float32(np.sqrt(2))) + 1) * 0.5
    r2 = r1 + g @ w["fc2.weight"] + w["fc2.bias"]
    logp = jax.nn.log_softmax(r2 @ w["head.weight"], axis=-1)
    return -(logp * onehot).sum() / SEQ
