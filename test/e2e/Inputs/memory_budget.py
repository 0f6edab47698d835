"""kilnc --memory-budget on a transformer encoder layer as PyTorch exports
one (encoder_layer.py): the gradients at budgets 0, 0.25, 0.5 and 1, on
the device given.

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

import encoder_layer

KILNC, KILN_RUN, OUT, DEVICE = sys.argv[1:5]
BUDGETS = [0.0, 0.25, 0.5, 1.0]
model, weights = encoder_layer.save(OUT, np.random.default_rng(7))

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
