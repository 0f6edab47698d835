#!/usr/bin/env python3
"""Independent NumPy references for the examples, for the end-to-end tests.

Rebuilds each example's weights from the .kg initializers (SplitMix64, as
docs/kg-language.md specifies), writes a random input and the expected
outputs computed in float64 with NumPy, so that the whole path -- parser,
passes, plan, executable, runtime kernels -- is checked against code that
shares nothing with kiln.

usage: reference.py MODEL OUTDIR      (MODEL: mlp | resnet_block | transformer_block)
"""
import math
import os
import sys

import numpy as np

MASK = (1 << 64) - 1


def splitmix_uniform(seed, count, scale):
    """random(seed=, scale=) of a .kg weight, as float32."""
    state, out = seed, np.empty(count, dtype=np.float64)
    for k in range(count):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        out[k] = (2.0 * ((z >> 11) * 2.0**-53) - 1.0) * scale
    return out.astype(np.float32)


def weight(shape, seed, scale):
    return splitmix_uniform(seed, int(np.prod(shape)), scale).reshape(shape).astype(np.float64)


def f32(v):
    return np.float64(np.float32(v))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, scale, bias, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def conv3x3_same(x, w):
    n, c, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for r in range(3):
        for s in range(3):
            patch = padded[:, :, r:r + h, s:s + wd]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, r, s])
    return out


def batch_norm(x, scale, bias, mean, var, eps=1e-5):
    shape = (1, -1, 1, 1)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(
        shape) + bias.reshape(shape)


def mlp(rng):
    x = rng.uniform(-1, 1, (8, 784)).astype(np.float32)
    w1, b1 = weight((784, 128), 1, 0.05), np.full(128, f32(0.01))
    w2, b2 = weight((128, 10), 2, 0.1), np.zeros(10)
    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
    return {"x": x}, {"probs": softmax(h @ w2 + b2)}


def resnet_block(rng):
    x = rng.uniform(-1, 1, (1, 16, 16, 16)).astype(np.float32)
    w1, w2 = weight((16, 16, 3, 3), 11, 0.1), weight((16, 16, 3, 3), 13, 0.1)
    m1, m2 = weight((16,), 12, 0.1), weight((16,), 14, 0.1)
    one, zero = np.ones(16), np.zeros(16)
    a = np.maximum(batch_norm(conv3x3_same(x.astype(np.float64), w1), one, zero, m1, one), 0)
    b = batch_norm(conv3x3_same(a, w2), one, zero, m2, one)
    return {"x": x}, {"y": np.maximum(b + x, 0)}


def transformer_block(rng):
    x = rng.uniform(-1, 1, (1, 32, 64)).astype(np.float32)
    xd = x.astype(np.float64)
    wq, wk, wv, wo = (weight((64, 64), s, 0.15) for s in (21, 22, 23, 24))
    w1, w2 = weight((64, 128), 25, 0.15), weight((128, 64), 26, 0.1)
    q, k, v = xd @ wq, xd @ wk, xd @ wv
    attn = softmax(q @ k.transpose(0, 2, 1) * 0.125)
    h1 = layer_norm(xd + (attn @ v) @ wo, 1.0, 0.0)
    y = layer_norm(h1 + gelu(h1 @ w1) @ w2, 1.0, 0.0)
    return {"x": x}, {"y": y}


def main():
    model, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    inputs, outputs = globals()[model](np.random.default_rng(2026))
    for name, value in inputs.items():
        np.save(os.path.join(outdir, name + ".npy"), value)
    for name, value in outputs.items():
        np.save(os.path.join(outdir, "expected_" + name + ".npy"), value)


if __name__ == "__main__":
    main()
