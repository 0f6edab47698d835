"""Gradients and training steps against JAX (jax[cpu], in the tests' own
virtual environment: an independent framework, never a kiln dependency).

- Gradients (kilnc --grad) of an MLP, a convolution block (strided, padded
  convolution with bias, batch normalization, ReLU, global average
  pooling, a linear layer) and a transformer encoder layer
  (encoder_layer.py: attention mask, Erf GELU, LayerNormalization, softmax
  cross entropy) equal jax.grad of the same function: every gradient
  within 1e-4 of its largest magnitude plus 1e-7 (f32 both; the encoder's
  k bias has a gradient of exactly zero, computed as rounding).
- Training (kilnc --train): 30 SGD steps and 30 Adam steps of an MLP
  classifier on a fixed synthetic task reach the weights of the same steps
  in JAX (the update rules of docs/training.md written out), within 1e-4
  of each weight's largest magnitude plus 1e-6; the loss falls.

Usage: jax_peer.py KILNC KILN_RUN OUT_DIR DEVICE (cpu or cuda-emu)
"""

import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import encoder_layer

KILNC, KILN_RUN, OUT, DEVICE = sys.argv[1:5]
rng = np.random.default_rng(11)
failures = []


def run(*command):
    done = subprocess.run(list(command), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
    return done.stdout


def save_model(name, nodes, inputs, weights, constants={}):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(k, T.FLOAT, list(v.shape))
                      for k, v in inputs.items()],
        [helper.make_tensor_value_info("loss", T.FLOAT, [])],
        [numpy_helper.from_array(v, k) for k, v in {**weights, **constants}.items()])
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    for k, v in inputs.items():
        np.save(os.path.join(OUT, f"{name}-{k}.npy"), v)
    return path


def agree(what, got, expected, rtol, atol):
    """Whether `got` is within rtol of `expected`'s largest magnitude plus
    atol; returns the error as a fraction of that tolerance."""
    scale = float(np.max(np.abs(expected)))
    error = float(np.max(np.abs(got - expected))) if got.shape == expected.shape else np.inf
    if not error <= rtol * scale + atol:
        failures.append(f"{what}: off by {error:.3g} (largest magnitude {scale:.3g})")
    return error / (rtol * scale + atol)


def trainable(weights):
    return "--trainable=^(" + "|".join(re.escape(k) for k in weights) + ")$"


def check_gradients(name, path, inputs, weights, loss):
    exe = os.path.join(OUT, f"{name}-grad-{DEVICE}.kx")
    run(KILNC, path, "--grad=loss", trainable(weights), f"--target={DEVICE}", "-o", exe)
    out = os.path.join(OUT, f"{name}-grads-{DEVICE}")
    run(KILN_RUN, exe, f"--device={DEVICE}", "--output-dir", out,
        *[a for k in inputs for a in ("--input", f"{k}={OUT}/{name}-{k}.npy")])
    expected_loss, grads = jax.value_and_grad(loss)(
        {k: jnp.asarray(v) for k, v in weights.items()}, *[jnp.asarray(v) for v in inputs.values()])
    worst = agree(f"{name}: loss", np.load(os.path.join(out, "loss.npy")),
                  np.asarray(expected_loss), 1e-4, 1e-7)
    for k in weights:
        worst = max(worst, agree(f"{name}: grad.{k}", np.load(os.path.join(out, f"grad.{k}.npy")),
                                 np.asarray(grads[k]), 1e-4, 1e-7))
    print(f"{name}: loss and {len(weights)} gradients against JAX, "
          f"largest error {worst:.1e} of the tolerance")


# An MLP regressor.
mlp_w = {"w1": rng.standard_normal((8, 32)).astype(np.float32) * 0.4,
         "b1": rng.standard_normal(32).astype(np.float32) * 0.1,
         "w2": rng.standard_normal((32, 4)).astype(np.float32) * 0.3,
         "b2": rng.standard_normal(4).astype(np.float32) * 0.1}
mlp_in = {"x": rng.standard_normal((16, 8)).astype(np.float32),
          "t": rng.standard_normal((16, 4)).astype(np.float32)}
check_gradients("mlp", save_model("mlp", [
    helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
    helper.make_node("Relu", ["a1"], ["h"]), helper.make_node("MatMul", ["h", "w2"], ["m2"]),
    helper.make_node("Add", ["m2", "b2"], ["y"]), helper.make_node("Sub", ["y", "t"], ["d"]),
    helper.make_node("Mul", ["d", "d"], ["d2"]),
    helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)], mlp_in, mlp_w),
    mlp_in, mlp_w,
    lambda w, x, t: jnp.mean((jnp.maximum(x @ w["w1"] + w["b1"], 0) @ w["w2"] + w["b2"] - t) ** 2))


# A convolution block, NCHW.
conv_w = {"k": rng.standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.3,
          "kb": rng.standard_normal(6).astype(np.float32) * 0.1,
          "gamma": 1 + rng.standard_normal(6).astype(np.float32) * 0.1,
          "beta": rng.standard_normal(6).astype(np.float32) * 0.1,
          "fc": rng.standard_normal((6, 5)).astype(np.float32) * 0.3}
conv_const = {"mean": rng.standard_normal(6).astype(np.float32) * 0.1,
              "var": 1 + rng.random(6).astype(np.float32)}
conv_in = {"img": rng.standard_normal((2, 3, 9, 9)).astype(np.float32),
           "t": rng.standard_normal((2, 5)).astype(np.float32)}


def conv_loss(w, img, t):
    c = jax.lax.conv_general_dilated(img, w["k"], (2, 2), [(1, 1), (1, 1)]) + \
        w["kb"].reshape(1, 6, 1, 1)
    shape = (1, 6, 1, 1)
    n = (c - conv_const["mean"].reshape(shape)) / jnp.sqrt(conv_const["var"].reshape(shape) + 1e-5)
    r = jnp.maximum(n * w["gamma"].reshape(shape) + w["beta"].reshape(shape), 0)
    return jnp.mean((r.mean(axis=(2, 3)) @ w["fc"] - t) ** 2)


check_gradients("conv", save_model("conv", [
    helper.make_node("Conv", ["img", "k", "kb"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"],
                     epsilon=1e-5),
    helper.make_node("Relu", ["n"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
    helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("MatMul", ["f", "fc"], ["y"]),
    helper.make_node("Sub", ["y", "t"], ["d"]), helper.make_node("Mul", ["d", "d"], ["d2"]),
    helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)], conv_in, conv_w, conv_const),
    conv_in, conv_w, conv_loss)

# The transformer encoder layer.
enc_dir = os.path.join(OUT, "encoder")
os.makedirs(enc_dir, exist_ok=True)
enc_path, enc_w = encoder_layer.save(enc_dir, np.random.default_rng(7))
enc_in = {k: np.load(os.path.join(enc_dir, k + ".npy")) for k in ("x", "onehot")}
for k, v in enc_in.items():
    np.save(os.path.join(OUT, f"encoder-{k}.npy"), v)
check_gradients("encoder", enc_path, enc_in, enc_w, encoder_layer.jax_loss)


# Training: an MLP classifier on a fixed synthetic task (the class of each
# point is the largest of three fixed projections of it).
cls_w = {"w1": rng.standard_normal((6, 16)).astype(np.float32) * 0.4,
         "b1": np.zeros(16, np.float32),
         "w2": rng.standard_normal((16, 3)).astype(np.float32) * 0.4,
         "b2": np.zeros(3, np.float32)}
points = rng.standard_normal((64, 6)).astype(np.float32)
onehot = np.eye(3, dtype=np.float32)[np.argmax(points @ rng.standard_normal((6, 3)), axis=1)]
cls_in = {"x": points, "onehot": onehot}
cls_path = save_model("classifier", [
    helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
    helper.make_node("Tanh", ["a1"], ["h"]), helper.make_node("MatMul", ["h", "w2"], ["m2"]),
    helper.make_node("Add", ["m2", "b2"], ["logits"]),
    helper.make_node("LogSoftmax", ["logits"], ["logp"], axis=-1),
    helper.make_node("Mul", ["logp", "onehot"], ["picked"]),
    helper.make_node("ReduceSum", ["picked"], ["total"], keepdims=0),
    helper.make_node("Div", ["total", "minus_count"], ["loss"])], cls_in, cls_w,
    {"minus_count": np.array(-64.0, np.float32)})


def cls_loss(w, x, onehot):
    logp = jax.nn.log_softmax(jnp.tanh(x @ w["w1"] + w["b1"]) @ w["w2"] + w["b2"], axis=-1)
    return -(logp * onehot).sum() / 64.0


def jax_train(optimizer, lr, steps):
    w = {k: jnp.asarray(v) for k, v in cls_w.items()}
    m = {k: jnp.zeros_like(v) for k, v in w.items()}
    v = {k: jnp.zeros_like(x) for k, x in w.items()}
    grad = jax.jit(jax.value_and_grad(cls_loss))
    losses = []
    for t in range(1, steps + 1):
        loss, g = grad(w, points, onehot)
        losses.append(float(loss))
        for k in w:
            if optimizer == "sgd":
                w[k] = w[k] - lr * g[k]
            else:
                m[k] = 0.9 * m[k] + 0.1 * g[k]
                v[k] = 0.999 * v[k] + 0.001 * g[k] * g[k]
                step = (m[k] / (1 - 0.9 ** t)) / (jnp.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
                w[k] = w[k] - lr * step
    return w, losses


for optimizer, lr in (("sgd", 0.5), ("adam", 0.02)):
    exe = os.path.join(OUT, f"classifier-{optimizer}-{DEVICE}.kx")
    run(KILNC, cls_path, "--train=loss", trainable(cls_w), f"--optimizer={optimizer}",
        f"--lr={lr}", f"--target={DEVICE}", "-o", exe)
    saved = os.path.join(OUT, f"classifier-{optimizer}-{DEVICE}.npz")
    printed = run(KILN_RUN, exe, f"--device={DEVICE}", "--steps", "30", "--save-weights", saved,
                  "--input", f"x={OUT}/classifier-x.npy",
                  "--input", f"onehot={OUT}/classifier-onehot.npy")
    losses = [float(v) for v in re.findall(r"step \d+: loss = (\S+)", printed)]
    expected, jax_losses = jax_train(optimizer, lr, 30)
    trained = np.load(saved)
    worst = max(agree(f"{optimizer}: {k} after 30 steps", trained[k], np.asarray(expected[k]),
                      1e-4, 1e-6) for k in cls_w)
    if len(losses) != 30 or not losses[-1] < 0.8 * losses[0]:
        failures.append(f"{optimizer}: losses {losses[:1]}..{losses[-1:]} over {len(losses)} steps")
    if losses:
        agree(f"{optimizer}: last loss", np.array(losses[-1]), np.array(jax_losses[-1]), 1e-4, 0)
    print(f"{optimizer}: 30 steps, loss {losses[0]:.4f} -> {losses[-1]:.4f} "
          f"(JAX {jax_losses[0]:.4f} -> {jax_losses[-1]:.4f}), weights' largest error "
          f"{worst:.1e} of the tolerance")

if failures:
    sys.exit("\n".join(failures))
print(f"against JAX on {DEVICE}: every gradient and weight agrees")
