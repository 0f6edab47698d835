"""kilnc --memory-budget on a transformer encoder layer (multi-head
attention with an additive mask, Erf GELU, two LayerNormalizations,
softmax cross entropy), as PyTorch exports one: the gradients at budgets
0, 0.25, 0.5 and 1, on the device given.

Checks, each a failure with its numbers if it does not hold:
- the bytes saved for the backward pass and the plan's peak (the arena
  kilnc reports) never fall as the budget rises;
- budget 0.5 saves at most 60% of the bytes budget 1 saves;
- every output (the loss and each gradient) at every budget agrees with
  budget 1's within 1e-5 of its largest magnitude plus 1e-7 (k's bias has
  a gradient of exactly zero, as softmax ignores it: what is computed is
  rounding, about 1e-9).

Usage: memory_budget.py KILNC KILN_RUN OUT_DIR DEVICE (cpu or cuda-emu)
"""

import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

KILNC, KILN_RUN, OUT, DEVICE = sys.argv[1:5]
BUDGETS = [0.0, 0.25, 0.5, 1.0]
SEQ, WIDTH, HEADS, FFN, CLASSES = 32, 64, 4, 256, 10
rng = np.random.default_rng(7)


def weight(*shape, scale=None):
    return (rng.standard_normal(shape) * (scale or 1 / np.sqrt(shape[0]))).astype(np.float32)


weights = {
    "ln1.weight": 1 + weight(WIDTH, scale=0.1), "ln1.bias": weight(WIDTH, scale=0.1),
    "q.weight": weight(WIDTH, WIDTH), "q.bias": weight(WIDTH, scale=0.1),
    "k.weight": weight(WIDTH, WIDTH), "k.bias": weight(WIDTH, scale=0.1),
    "v.weight": weight(WIDTH, WIDTH), "v.bias": weight(WIDTH, scale=0.1),
    "o.weight": weight(WIDTH, WIDTH), "o.bias": weight(WIDTH, scale=0.1),
    "ln2.weight": 1 + weight(WIDTH, scale=0.1), "ln2.bias": weight(WIDTH, scale=0.1),
    "fc1.weight": weight(WIDTH, FFN), "fc1.bias": weight(FFN, scale=0.1),
    "fc2.weight": weight(FFN, WIDTH), "fc2.bias": weight(WIDTH, scale=0.1),
    "head.weight": weight(WIDTH, CLASSES),
}
# A causal mask, added to the scores (PyTorch's float attn_mask).
mask = np.triu(np.full((SEQ, SEQ), -1e4, np.float32), 1)
constants = {
    "mask": mask, "scale": np.array(np.sqrt(WIDTH // HEADS), np.float32),
    "sqrt2": np.array(np.sqrt(2.0), np.float32), "one": np.array(1.0, np.float32),
    "half": np.array(0.5, np.float32),
    "heads_shape": np.array([SEQ, HEADS, WIDTH // HEADS], np.int64),
    "flat_shape": np.array([SEQ, WIDTH], np.int64),
}


def node(op, inputs, output, name, **attrs):
    return helper.make_node(op, inputs, [output], name=name, **attrs)


def linear(scope, x, out):
    return [node("MatMul", [x, scope + ".weight"], out + "_mm", f"/{scope}/MatMul"),
            node("Add", [out + "_mm", scope + ".bias"], out, f"/{scope}/Add")]


def heads(scope, x, out):
    return [node("Reshape", [x, "heads_shape"], out + "_r", f"/attn/{scope}/Reshape"),
            node("Transpose", [out + "_r"], out, f"/attn/{scope}/Transpose", perm=[1, 0, 2])]


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
model = os.path.join(OUT, "encoder_layer.onnx")
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
np.save(os.path.join(OUT, "x.npy"), rng.standard_normal((SEQ, WIDTH)).astype(np.float32))
np.save(os.path.join(OUT, "onehot.npy"),
        np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, SEQ)])

trainable = "--trainable=^(" + "|".join(re.escape(k) for k in weights) + ")$"
failures = []
saved, peak, outputs = {}, {}, {}
for budget in BUDGETS:
    exe = os.path.join(OUT, f"budget-{budget}.kx")
    compiled = subprocess.run(
        [KILNC, model, "--grad=loss", trainable, f"--memory-budget={budget}",
         f"--target={DEVICE}", "-o", exe], capture_output=True, text=True)
    if compiled.returncode != 0:
        sys.exit(f"kilnc at budget {budget} failed:\n{compiled.stderr}")
    report = re.search(r"kiln-remat: budget [0-9.e+-]+: saves (\d+) bytes", compiled.stderr)
    plan = re.search(r"arena (\d+) bytes peak", compiled.stderr)
    if not report or not plan:
        sys.exit(f"no report at budget {budget}:\n{compiled.stderr}")
    saved[budget], peak[budget] = int(report.group(1)), int(plan.group(1))
    out = os.path.join(OUT, f"out-{budget}")
    ran = subprocess.run(
        [KILN_RUN, exe, f"--device={DEVICE}", "--input", f"x={OUT}/x.npy",
         "--input", f"onehot={OUT}/onehot.npy", "--output-dir", out],
        capture_output=True, text=True)
    if ran.returncode != 0:
        sys.exit(f"kiln-run at budget {budget} failed:\n{ran.stderr}")
    outputs[budget] = {f: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}
    print(f"budget {budget}: saves {saved[budget]} bytes, plan peak {peak[budget]} bytes")

for low, high in zip(BUDGETS, BUDGETS[1:]):
    if saved[low] > saved[high] or peak[low] > peak[high]:
        failures.append(f"budget {low} saves {saved[low]} bytes with a peak of {peak[low]}, "
                        f"more than budget {high}: {saved[high]} and {peak[high]}")
if saved[0.5] > 0.6 * saved[1.0]:
    failures.append(f"budget 0.5 saves {saved[0.5]} bytes, over 60% of budget 1's {saved[1.0]}")
if saved[0.0] >= saved[1.0]:
    failures.append("budget 0 recomputes nothing")
reference = outputs[1.0]
if len(reference) != 1 + len(weights):
    failures.append(f"budget 1 wrote {len(reference)} outputs, not the loss and "
                    f"{len(weights)} gradients")
for budget in BUDGETS[:-1]:
    for name, expected in reference.items():
        got = outputs[budget].get(name)
        scale = max(float(np.max(np.abs(expected))), 1e-30)
        if got is None or got.shape != expected.shape or \
                float(np.max(np.abs(got - expected))) > 1e-5 * scale + 1e-7:
            failures.append(f"budget {budget}: {name} differs from budget 1's")
print(f"budget 0.5 saves {100 * saved[0.5] / saved[1.0]:.0f}% of budget 1's bytes")
if failures:
    sys.exit("\n".join(failures))
print(f"memory budgets on {DEVICE}: monotonic, outputs unchanged")
