"""Runs models on cuda-emu with sanitized kernels and compares with the CPU.

    sanitized_emu.py KILNC KILN_RUN WORKDIR MODEL.kg...

Each model is compiled twice: for the CPU, and for cuda-emu with
`--impl=generated --emu-sanitize=address,undefined` (every kernel kiln can
generate is generated, and built with AddressSanitizer and UBSan). Both run
on the same random inputs, the emulator in checked mode (guard pages around
every kernel parameter and shared array); every output must agree with
the CPU within the tolerance of its type (f32: rtol 1e-4, atol 1e-5; f64:
rtol 1e-12; f16 and bf16, rounded at every stored step: those of
cuda-emu-tensor-cores.test; integers and bool exactly).
A sanitizer report aborts kiln-run, which fails the run. Prints one line per
model.
"""
import os
import subprocess
import sys

import numpy as np

# (rtol, atol) per output element type.
TOLERANCES = {"f32": (1e-4, 1e-5), "f64": (1e-12, 0.0), "f16": (2e-3, 2e-3),
              "bf16": (1e-2, 2e-2)}


def run(args):
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


def main():
    kilnc, kiln_run, work = sys.argv[1:4]
    for model in sys.argv[4:]:
        name = os.path.splitext(os.path.basename(model))[0]
        cpu, emu = (os.path.join(work, f"{name}-{d}.kx") for d in ("cpu", "emu"))
        run([kilnc, model, "-o", cpu])
        run([kilnc, model, "--target=cuda-emu", "--impl=generated",
             "--emu-sanitize=address,undefined", "-o", emu])
        described = run([kiln_run, cpu, "--describe"]).splitlines()
        inputs = [l.split()[1].rstrip(":") for l in described if l.strip().startswith("input ")]
        # "  output y: f16[2, 67, 72]" -> ("y", "f16")
        outputs = [(l.split()[1].rstrip(":"), l.split()[2].split("[")[0])
                   for l in described if l.strip().startswith("output ")]
        feeds = [f"--input={n}=random:{k + 1}" for k, n in enumerate(inputs)]
        run([kiln_run, cpu, "--device=cpu", *feeds, "--output-dir", os.path.join(work, name + "-cpu")])
        run([kiln_run, emu, "--device=cuda-emu", "--emu-checked", "--emu-order=shuffled", *feeds,
             "--output-dir", os.path.join(work, name + "-emu")])
        worst = 0.0
        for out, dtype in outputs:
            want = np.load(os.path.join(work, name + "-cpu", out + ".npy"))
            got = np.load(os.path.join(work, name + "-emu", out + ".npy"))
            if dtype not in TOLERANCES:  # integers and bool: exactly
                if want.shape != got.shape or not np.array_equal(got, want):
                    sys.exit(f"FAIL: {name}: output {out} differs from the CPU")
                continue
            rtol, atol = TOLERANCES[dtype]
            want, got = want.astype(np.float64), got.astype(np.float64)
            if want.shape != got.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
                sys.exit(f"FAIL: {name}: output {out} differs from the CPU "
                         f"(max abs difference {np.max(np.abs(got - want)) if want.shape == got.shape else 'shape'})")
            if want.size:
                worst = max(worst, float(np.max(np.abs(got - want))))
        print(f"{name}: {len(outputs)} outputs agree with the CPU (max abs difference {worst:.2e}), "
              "no sanitizer report")


if __name__ == "__main__":
    main()
