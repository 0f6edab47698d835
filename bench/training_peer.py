"""Gradients at compile time against JAX (jax.jit of jax.value_and_grad on
XLA's CPU backend): the same models, the same sizes, kiln's --grad
executable run by kiln-run and JAX's compiled function timed in the same
benchmark run. JAX is the benchmark's own peer, installed with pip into
the bench venv when it can be (scripts/bench); without it the rows say so.

Models: an MLP regressor (batch 128, 784 -> 512 -> 256 -> 10, ReLU, mean
squared error) and an encoder block (128 tokens of width 256: layer norm,
single-head attention, an Erf-GELU FFN of 1024, residual, mean square).
"""

import os
import re
import statistics
import subprocess
import time

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def _vi(name, shape):
    return helper.make_tensor_value_info(name, T.FLOAT, shape)


def mlp(rng, quick):
    batch, sizes = (32, [784, 128, 10]) if quick else (128, [784, 512, 256, 10])
    weights = {}
    nodes, h = [], "x"
    for k in range(len(sizes) - 1):
        weights[f"w{k}"] = (rng.standard_normal((sizes[k], sizes[k + 1])) * 0.05).astype(np.float32)
        weights[f"b{k}"] = np.zeros(sizes[k + 1], np.float32)
        nodes += [helper.make_node("MatMul", [h, f"w{k}"], [f"m{k}"]),
                  helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"])]
        h = f"a{k}"
        if k < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [h], [f"r{k}"]))
            h = f"r{k}"
    nodes += [helper.make_node("Sub", [h, "t"], ["d"]), helper.make_node("Mul", ["d", "d"], ["d2"]),
              helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)]
    inputs = {"x": (batch, sizes[0]), "t": (batch, sizes[-1])}

    def jax_loss(w, x, t):
        import jax.numpy as jnp
        h = x
        for k in range(len(sizes) - 1):
            h = h @ w[f"w{k}"] + w[f"b{k}"]
            if k < len(sizes) - 2:
                h = jnp.maximum(h, 0)
        return jnp.mean((h - t) ** 2)
    return "MLP 784-512-256-10, batch 128" if not quick else "MLP (quick)", nodes, inputs, weights, \
        jax_loss


def encoder(rng, quick):
    seq, width, ffn = (32, 64, 256) if quick else (128, 256, 1024)
    w = {"ln_scale": np.ones(width, np.float32), "ln_bias": np.zeros(width, np.float32)}
    for name, shape in (("wq", (width, width)), ("wk", (width, width)), ("wv", (width, width)),
                        ("w1", (width, ffn)), ("w2", (ffn, width))):
        w[name] = (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    consts = {"scale": np.array(np.sqrt(width), np.float32), "sqrt2": np.array(np.sqrt(2), np.float32),
              "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)}
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["n"], axis=-1),
        helper.make_node("MatMul", ["n", "wq"], ["q"]), helper.make_node("MatMul", ["n", "wk"], ["k"]),
        helper.make_node("MatMul", ["n", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]), helper.make_node("Div", ["s0", "scale"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["a"]),
        helper.make_node("MatMul", ["a", "w1"], ["h"]), helper.make_node("Div", ["h", "sqrt2"], ["hs"]),
        helper.make_node("Erf", ["hs"], ["e"]), helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["h", "e1"], ["he"]), helper.make_node("Mul", ["he", "half"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["f"]), helper.make_node("Add", ["x", "f"], ["out"]),
        helper.make_node("Mul", ["out", "out"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0)]

    def jax_loss(w, x):
        import jax
        import jax.numpy as jnp
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        n = (x - mu) / jnp.sqrt(var + 1e-5) * w["ln_scale"] + w["ln_bias"]
        q, k, v = n @ w["wq"], n @ w["wk"], n @ w["wv"]
        p = jax.nn.softmax(q @ k.T / np.sqrt(width), axis=-1)
        h = (p @ v) @ w["w1"]
        out = x + (0.5 * h * (1 + jax.scipy.special.erf(h / np.sqrt(2)))) @ w["w2"]
        return jnp.mean(out * out)
    name = f"encoder block {seq}x{width}, FFN {ffn}"
    return name, nodes, {"x": (seq, width)}, dict(w, **consts), jax_loss, list(consts)


def jax_median_us(loss, weights, inputs, rng, runs):
    import jax
    step = jax.jit(jax.value_and_grad(loss))
    args = [np.asarray(rng.standard_normal(shape), np.float32) for shape in inputs.values()]
    w = {k: jax.numpy.asarray(v) for k, v in weights.items()}
    for _ in range(3):
        jax.block_until_ready(step(w, *args))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(step(w, *args))
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def bench_training(bench, quick):
    print("gradients at compile time against JAX", flush=True)
    try:
        import jax  # noqa: F401
        have_jax = True
    except ImportError:
        have_jax = False
    rng = np.random.default_rng(0)
    runs = 5 if quick else 20
    for make in (mlp, encoder):
        made = make(rng, quick)
        name, nodes, inputs, weights, loss = made[:5]
        constants = made[5] if len(made) > 5 else []
        graph = helper.make_graph(nodes, "grad", [_vi(k, list(s)) for k, s in inputs.items()],
                                  [_vi("loss", [])],
                                  [numpy_helper.from_array(v, k) for k, v in weights.items()])
        path = os.path.join(bench.work, name.split()[0] + ".onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        trainable = ["--trainable=^(" + "|".join(k for k in weights if k not in constants) + ")$"] \
            if constants else []
        bench.compile(path, path + ".kx", "--grad=loss", *trainable)
        kiln_us = bench.run_median_us(path + ".kx", runs=runs,
                                      inputs=[f"{k}=random:{i + 1}" for i, k in enumerate(inputs)])
        if not have_jax:
            bench.row("training", name, "loss and gradients", f"{kiln_us:.0f}", "us",
                      status="no peer: JAX is not installed")
            continue
        trained = {k: v for k, v in weights.items() if k not in constants}
        fixed = {k: v for k, v in weights.items() if k in constants}
        jax_us = jax_median_us(lambda w, *a: loss(dict(w, **fixed), *a), trained, inputs, rng, runs)
        bench.row("training", name, "loss and gradients", f"{kiln_us:.0f}", "us",
                  peer=f"{jax_us:.0f}", ratio=f"{kiln_us / jax_us:.2f}x",
                  status="kiln-run median against jax.jit(value_and_grad), same threads")
    bench_memory_budgets(bench, path, trainable, inputs, runs)


def step_us(bench, exe, inputs, steps):
    """One training step's time: the median kiln-run --steps reports (the
    first step apart)."""
    given = [arg for spec in inputs for arg in ("--input", spec)]
    p = subprocess.run([bench.run, exe, *given, "--steps", str(steps), "--threads",
                        str(bench.threads)], capture_output=True, text=True, env=bench.env)
    m = re.search(r"a median of ([0-9.]+) us a step", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"kiln-run --steps {exe} failed:\n{p.stderr[-2000:]}{p.stdout[-2000:]}")
    return float(m.group(1))


def bench_memory_budgets(bench, path, trainable, inputs, runs):
    """The encoder block's gradients and its Adam training step at memory
    budgets 1, 0.5 and 0: time against budget 1's in the same run, and the
    plan: kernels, bytes moved, the arena's peak, bytes saved for the
    backward pass, FLOPs recomputed."""
    print("the encoder block by memory budget", flush=True)
    given = [f"{k}=random:{i + 1}" for i, k in enumerate(inputs)]
    for metric, flags, time_us in (
            ("loss and gradients", ["--grad=loss"],
             lambda exe: bench.run_median_us(exe, runs=runs, inputs=given)),
            ("Adam training step", ["--train=loss", "--optimizer=adam", "--lr=0.001"],
             lambda exe: step_us(bench, exe, given, steps=runs + 1))):
        base_us = None
        for budget in (1, 0.5, 0):
            exe = f"{path}.{flags[0][2:6]}-budget-{budget}.kx"
            _, _, _, report = bench.compile(path, exe, *flags, *trainable,
                                            f"--memory-budget={budget}", "--fusion-report")
            kernels = re.search(r"graph ops in (\d+) kernels", report).group(1)
            plan = re.search(r"arena (\d+) bytes peak.*; (\d+) bytes moved", report)
            remat = re.search(r"saves (\d+) bytes for the backward pass .*\((\d+) FLOPs", report)
            us = time_us(exe)
            base_us = base_us or us
            bench.row("training", f"encoder block, budget {budget}", metric, f"{us:.0f}", "us",
                      peer=f"{base_us:.0f}", ratio=f"{us / base_us:.2f}x",
                      status=f"against budget 1; {kernels} kernels, {plan.group(2)} bytes "
                             f"moved, arena {plan.group(1)} bytes, saves {remat.group(1)} "
                             f"bytes, recomputes {remat.group(2)} FLOPs")
