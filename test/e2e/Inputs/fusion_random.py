#!/usr/bin/env python3
"""fusion_random.py --kilnc K --kiln-run R --work DIR [--count N] [--seed S] [--emu]

Writes N random .kg models (elementwise chains and trees, broadcasts,
reshapes, matmuls with bias and activation, sibling matmuls, attention,
softmax, layer norm, reductions, masks made by comparisons and casts,
values with several users), compiles each
with and without fusion, runs the fused one on the compiled CPU target (its
native kernels, library calls and f32 loops) and the unfused one on the
double-precision reference evaluator (--device=reference), on the same
random input, and compares every output (|fused - unfused| <= 1e-5 + 1e-4
|unfused|; not every output all zeros). With --emu the fused model is
compiled for cuda-emu and its generated kernels run through the CUDA
emulator. Fails unless every fusion
kind except conv_epilogue formed at least once over the set, so the check
cannot pass by fusing nothing.
"""
import argparse
import os
import random
import re
import subprocess
import sys

import numpy as np

KINDS = ["attention", "horizontal", "loop", "matmul_epilogue", "reduction"]


class Model:
    def __init__(self, rng, index):
        self.rng = rng
        self.b = rng.choice([1, 2])
        self.s = rng.randint(3, 9)
        self.d = rng.choice([4, 6, 8, 12, 16])
        self.lines = [f"model random_{index}", f"input x: f32[{self.b}, {self.s}, {self.d}]"]
        self.weights = 0
        self.names = 0
        self.pool = ["x"]  # values of shape [b, s, d]

    def weight(self, shape, scale=None):
        self.weights += 1
        name = f"w{self.weights}"
        scale = scale if scale is not None else round(0.9 / (shape[0] ** 0.5), 4)
        dims = ", ".join(str(d) for d in shape)
        self.lines.append(
            f"weight {name}: f32[{dims}] = random(seed={self.rng.randint(1, 10**6)}, scale={scale})")
        return name

    def let(self, expr):
        self.names += 1
        name = f"v{self.names}"
        self.lines.append(f"{name} = {expr}")
        return name

    def pick(self):
        # Recent values more often, so chains form; older ones create
        # values with several users.
        return self.rng.choice(self.pool[-3:] if self.rng.random() < 0.7 else self.pool)

    def step(self):
        r = self.rng.random()
        a = self.pick()
        d = self.d
        if r < 0.22:
            op = self.rng.choice(["relu", "tanh", "sigmoid", "neg", "abs", "gelu", "erf"])
            v = self.let(f"{op}({a})")
        elif r < 0.40:
            b = self.rng.choice([self.pick(), self.weight([d]), "0.5"])
            b = "0.5" if b == a else b  # a - a would be all zeros
            op = self.rng.choice(["+", "-", "*"])
            v = self.let(f"tanh({a} {op} {b})" if op == "*" else f"{a} {op} {b}")
        elif r < 0.52:
            act = self.rng.choice(["", "relu", "gelu", "tanh"])
            mm = f"matmul({a}, {self.weight([d, d])})"
            if self.rng.random() < 0.7:
                mm = f"{mm} + {self.weight([d], 0.1)}"
            v = self.let(f"{act}({mm})" if act else mm)
        elif r < 0.60:
            outs = [self.let(f"matmul({a}, {self.weight([d, d])})") for _ in range(self.rng.randint(2, 3))]
            self.pool.extend(outs[:-1])
            v = self.let(" + ".join(outs))  # distinct weights: never all zeros
        elif r < 0.68:
            q = self.let(f"matmul({a}, {self.weight([d, d])})")
            k = self.let(f"matmul({a}, {self.weight([d, d])})")
            vv = self.let(f"matmul({a}, {self.weight([d, d])})")
            scores = self.let(f"matmul({q}, transpose({k}, perm=[0, 2, 1])) * {round(1 / d ** 0.5, 4)}")
            p = self.let(f"softmax({scores}, axis=-1)")
            v = self.let(f"matmul({p}, {vv})")
        elif r < 0.76:
            v = self.let(f"layer_norm({a} + {self.pick()}, {self.weight([d], 1.0)}, {self.weight([d], 0.1)}, axis=-1)")
        elif r < 0.83:
            v = self.let(f"softmax({a} * 2.0, axis=-1)")
        elif r < 0.90:
            mean = self.let(f"reduce_mean({a}, axes=[2], keepdims=true)")
            v = self.let(f"tanh({a} - {mean})")
        elif r < 0.95:
            flat = self.let(f"reshape(relu({a}), shape=[{self.b}, {self.s * d}])")
            v = self.let(f"reshape(sigmoid({flat}) * 2.0, shape=[{self.b}, {self.s}, {d}])")
        elif r < 0.975:
            # A mask made from a comparison and cast back to f32 (casts and
            # compares compiled in the CPU's runs).
            v = self.let(f"cast(gt({a}, 0.0), to=f32) * {a} + tanh({a})")
        else:
            e = self.let(f"exp(tanh({a}))")
            self.pool.append(self.let(f"{e} * 0.5"))
            v = self.let(f"{e} - 1.0")
        self.pool.append(v)

    def text(self, steps):
        for _ in range(steps):
            self.step()
        outputs = [self.pool[-1]]
        extra = [p for p in self.pool[1:-1] if p not in outputs]
        if extra and self.rng.random() < 0.6:
            outputs.append(self.rng.choice(extra))
        self.lines.append("output " + ", ".join(outputs))
        return "\n".join(self.lines) + "\n"


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{done.stdout}{done.stderr}")
    return done.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--emu", action="store_true",
                        help="compile the fused model for cuda-emu and run it there")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    totals = {kind: 0 for kind in KINDS + ["conv_epilogue"]}
    worst = 0.0
    for i in range(args.count):
        rng = random.Random(args.seed + i)
        model = Model(rng, i)
        path = os.path.join(args.work, f"random_{i}.kg")
        with open(path, "w") as f:
            f.write(model.text(rng.randint(5, 12)))
        fused, unfused = path[:-3] + ".fused.kx", path[:-3] + ".unfused.kx"
        target = ["--target=cuda-emu"] if args.emu else []
        report = run([args.kilnc, path, "--fusion-report", "-o", fused] + target)
        run([args.kilnc, path, "--no-fusion", "-o", unfused])
        summary = re.search(r"kilnc: fusion @\S+: .*", report).group(0)
        for kind, count in re.findall(r" (\w+) (\d+),", summary):
            totals[kind] += int(count)
        outs = []
        for kx, tag in ((fused, "a"), (unfused, "b")):
            out = path[:-3] + "." + tag
            device = (["--device=cuda-emu"] if args.emu else []) if tag == "a" else \
                ["--device=reference"]
            run([args.kiln_run, kx, "--input", f"x=random:{i + 1}", "--output-dir", out] + device)
            outs.append(out)
        names = sorted(os.listdir(outs[1]))
        if sorted(os.listdir(outs[0])) != names or not names:
            sys.exit(f"FAIL: {path}: outputs differ in name: {names}")
        nonzero = False
        for name in names:
            a = np.load(os.path.join(outs[0], name)).astype(np.float64)
            b = np.load(os.path.join(outs[1], name)).astype(np.float64)
            if a.shape != b.shape:
                sys.exit(f"FAIL: {path}: {name}: shape {a.shape} vs {b.shape}")
            nonzero |= bool(np.any(b))
            err = np.abs(a - b)
            if np.any(err > 1e-5 + 1e-4 * np.abs(b)) or np.isnan(a).any() != np.isnan(b).any():
                sys.exit(f"FAIL: {path}: {name}: fused and unfused differ by up to {err.max():.3g}")
            worst = max(worst, float(err.max()))
        if not nonzero:  # (one output may be all zeros, e.g. a relu)
            sys.exit(f"FAIL: {path}: every output is all zeros; the comparison proves nothing")
    missing = [kind for kind in KINDS if totals[kind] == 0]
    if missing:
        sys.exit(f"FAIL: no {', '.join(missing)} region formed in {args.count} graphs; the "
                 "generator no longer exercises every kind")
    print(f"{args.count} random graphs: fused{' (on cuda-emu)' if args.emu else ''} and unfused outputs agree "
          f"(largest difference {worst:.2g})")
    print("regions: " + ", ".join(f"{k} {totals[k]}" for k in KINDS))


if __name__ == "__main__":
    main()
