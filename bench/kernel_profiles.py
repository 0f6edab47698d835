"""The `kernels` section of scripts/bench: generated GPU kernels judged by
cuda-emu's profile (kiln-run --profile), without a GPU.

Every number here is predicted: the emulator counts each kernel's memory
requests and Tensor Core work exactly, and kiln's model of an H200
(include/kiln/Runtime/PerformanceModel.h) turns the counts into time. The
fraction of ideal is the step's least possible time (its bytes at the DRAM
rate or its FLOPs at the unit's peak) over the predicted time.
"""

import json
import os
import subprocess
import sys
import time

# Kernel kinds at the sizes the targets name: (name, .kg text, inputs,
# --profile-sample blocks, target fraction of ideal or None). The GEMMs'
# right-hand sides are inputs, not weights, so that the executables stay
# small enough to carry to a GPU machine (scripts/gpu-check).
KINDS = [
    ("gemm f16 4096^3 +bias+relu", """model gemm
input x: f16[4096, 4096]
input w: f16[4096, 4096]
weight b: f16[4096] = random(seed=4, scale=0.2)
y = relu(matmul(x, w) + b)
output y
""", ["x", "w"], 8, 0.5),
    ("gemm f32 1024^3 (CUDA cores)", """model gemm32
input x: f32[1024, 1024]
input w: f32[1024, 1024]
y = matmul(x, w)
output y
""", ["x", "w"], 8, None),
    ("attention f16 8x12x1024x64", """model attention
input q: f16[8, 12, 1024, 64]
input k: f16[8, 12, 1024, 64]
input v: f16[8, 12, 1024, 64]
o = matmul(softmax(matmul(q, k, transpose_b=true) * 0.125, axis=-1), v)
output o
""", ["q", "k", "v"], 8, 0.4),
    ("attention f32 2x12x512x64", """model attention32
input q: f32[2, 12, 512, 64]
input k: f32[2, 12, 512, 64]
input v: f32[2, 12, 512, 64]
o = matmul(softmax(matmul(q, k, transpose_b=true) * 0.125, axis=-1), v)
output o
""", ["q", "k", "v"], 8, None),
    ("layer norm f32 4096x1024", """model layer_norm
input x: f32[4096, 1024]
weight g: f32[1024] = random(seed=1, scale=1.0)
weight b: f32[1024] = random(seed=2, scale=1.0)
y = layer_norm(x, g, b, axis=1)
output y
""", ["x"], 64, 0.8),
    ("softmax f32 4096x1024", """model softmax
input x: f32[4096, 1024]
y = softmax(x * 0.5, axis=-1)
output y
""", ["x"], 64, None),
    ("transpose f32 2048x2048", """model transpose
input x: f32[2048, 2048]
y = transpose(x, perm=[1, 0])
output y
""", ["x"], 64, 0.8),
    ("gelu f32 2048x2048", """model gelu
input x: f32[2048, 2048]
y = gelu(x) * 2.0 + 1.0
output y
""", ["x"], 64, None),
    ("reduce_sum f32 4096x1024", """model rowsum
input x: f32[4096, 1024]
y = reduce_sum(x, axes=[1])
output y
""", ["x"], 64, None),
]


def profile(bench, model, flags, inputs, sample, name):
    """kiln-run --profile's kernels for `model` (compiled for cuda-emu)."""
    exe = os.path.join(bench.work, name + ".prof.kx")
    # The kernels an sm_90 build gets: the model is an H200's.
    bench.compile(model, exe, "--target=cuda-emu", "--arch=sm_90", "--impl=generated",
                  "--emu-profile", *flags)
    out = exe + ".json"
    cmd = [bench.run, exe, "--device=cuda-emu", "--profile", out]
    cmd += [a for i in inputs for a in ("--input", f"{i}=random:{len(i)}")]
    if sample:
        cmd += ["--profile-sample", str(sample)]
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=bench.env)
    bench.last_profile_s = time.perf_counter() - start
    if p.returncode != 0:
        raise RuntimeError(f"kiln-run --profile {name} failed:\n{p.stderr[-2000:]}")
    return json.load(open(out))["kernels"]


def efficiencies(k):
    load = k["global_load_requested_bytes"] / max(1, 32 * k["global_load_sectors"])
    store = k["global_store_requested_bytes"] / max(1, 32 * k["global_store_sectors"])
    waves = k["shared_wavefronts"] / k["shared_requests"] if k["shared_requests"] else 1.0
    return load, store, waves


def bench_kernels(bench, quick):
    print("kernels: predicted fraction of ideal on an H200 (cuda-emu's profile)", flush=True)
    for name, text, inputs, sample, target in KINDS[:3] if quick else KINDS:
        path = os.path.join(bench.work, name.split()[0] + ".kg")
        with open(path, "w") as f:
            f.write(text)
        for k in profile(bench, path, [], inputs, sample, name.replace(" ", "_").replace("^", "")):
            load, store, waves = efficiencies(k)
            fraction = k["ideal_us"] / k["predicted_us"]
            status = f"load {load:.0%}, store {store:.0%}, {waves:.2f} wavefronts/request, " \
                     f"{k['limiter']}-bound, {k['registers']} registers, occupancy " \
                     f"{k['occupancy']:.2f}"
            if target is not None:
                status = ("met; " if fraction >= target else "MISSED; ") + status
            bench.row("kernels", f"{name}: {k['kernel']}", "predicted / ideal",
                      f"{fraction:.2f}", "", peer=f"{k['ideal_us']:.1f} us ideal",
                      ratio=f"{k['predicted_us']:.1f} us",
                      target=f">= {target:g}" if target is not None else "", status=status)
        if name.startswith("gemm f16"):
            # The emulator's own speed: mma once per warp, sampled blocks.
            wall = bench.last_profile_s
            bench.row("kernels", name, f"profile run, {sample} blocks", f"{wall:.1f}", "s",
                      target="< 60 s", status="met" if wall < 60 else "MISSED")


def bench_kernel_efficiency(bench, quick, models):
    """Every generated kernel of the examples and the benchmark models: load
    and store efficiency >= 90%, at most 1.1 wavefronts per request."""
    print("kernels: coalescing and bank conflicts of every generated kernel", flush=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = [(os.path.join(root, "examples", f), [], ["x"], 0) for f in
             ("mlp.kg", "resnet_block.kg", "transformer_block.kg")]
    if not quick:
        for name in models.RUNTIME_MODELS:
            path = os.path.join(bench.work, name + ".onnx")
            models.RUNTIME_MODELS[name](path)
            cases.append((path, [], ["x"], 16))
    for model, flags, inputs, sample in cases:
        base = os.path.basename(model)
        for k in profile(bench, model, flags, inputs, sample, base):
            load, store, waves = efficiencies(k)
            ok = load >= 0.9 and store >= 0.9 and waves <= 1.1
            bench.row("kernels", f"{base}: {k['kernel']}", "load/store efficiency",
                      f"{load:.2f}/{store:.2f}", "", peer=f"{waves:.2f} wavefronts/req",
                      target=">= 0.9, <= 1.1", status=("met" if ok else "MISSED") +
                      f"; {k['step']}")


def slug(name):
    """A file name for a kind: "gemm f16 4096^3 +bias+relu" -> gemm-f16-4096e3-bias-relu."""
    words = "".join(c if c.isalnum() or c == "_" else " " for c in name.replace("^", "e"))
    return "-".join(words.split())


def write_models(folder):
    """scripts/gpu-check's half: each kind's .kg in FOLDER, and on stdout one
    tab-separated line per kind: slug, inputs, profile sample, target (or -),
    title. On a GPU the same kernels are timed against the ideal time."""
    for name, text, inputs, sample, target in KINDS:
        with open(os.path.join(folder, slug(name) + ".kg"), "w") as f:
            f.write(text)
        print("\t".join([slug(name), ",".join(inputs), str(sample),
                         "-" if target is None else f"{target:g}", name]))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write-models":
        write_models(sys.argv[2])
        sys.exit(0)
    print("usage: kernel_profiles.py --write-models FOLDER (scripts/bench runs the rest)")
    sys.exit(2)
