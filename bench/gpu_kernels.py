#!/usr/bin/env python3
"""Kernel quality from kiln-run traces (scripts/gpu-check, issue 8's GPU part).

  gpu_kernels.py bandwidth TRACE.json MODEL.kx   loop/reduction kernels as a
      fraction of the device-to-device copy bandwidth measured in the same
      run (the model's input transfer is a D2D copy on the GPU);
  gpu_kernels.py gemm GENERATED.json LIBRARY.json   each matmul step's time,
      generated kernel against cuBLASLt, from two traces of one model;
  gpu_kernels.py predicted NAME TRACE.json PROFILE.json   each kernel's time
      as cuda-emu's profile predicted it (kiln-run --profile, made with the
      bundle) against the time the trace measured: the first GPU run's
      correction of the model's constants (PerformanceModel.h);
  gpu_kernels.py ideal TITLE TARGET TRACE.json PROFILE.json LIBRARY.json|- PEER_US|-
      a kernel kind at its target size: ideal time (the profile's), predicted,
      measured, measured fraction of ideal against the target, and the vendor
      library's (a trace of the --impl=library build) or PyTorch's time;
  gpu_kernels.py counters NAME NCU.csv PROFILE.json   each kernel's
      emulator counters (the profile) beside the hardware's (Nsight Compute,
      `ncu --csv --page raw --print-units base`): global sectors, shared
      wavefronts, DRAM bytes; the test of the profile's counting.

Prints one Markdown table row per step. The traces come from
`kiln-run --trace` (CUDA events around each step on a GPU; wall time on the
CPU, where the arithmetic can be checked but the numbers mean nothing).
"""

import json
import re
import subprocess
import sys


def steps(trace_path):
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("ph") == "X"]


def describe(kiln_run, exe):
    """Step index -> bytes its outputs and inputs occupy, from --describe."""
    out = subprocess.run([kiln_run, exe, "--describe"], capture_output=True, text=True).stdout
    sizes = {}
    width = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i64": 8, "i32": 4, "i1": 1}
    for line in out.splitlines():
        m = re.match(r"\s+#(\d+) .*", line)
        if not m:
            continue
        total = 0
        for dtype, dims in re.findall(r"-> arena\[\d+\] (\w+)\[([0-9, ]*)\]", line):
            n = 1
            for d in dims.split(","):
                if d.strip():
                    n *= int(d)
            total += n * width.get(dtype, 4)
        sizes[int(m.group(1))] = total
    return sizes


def bandwidth(trace_path, exe, kiln_run):
    events = steps(trace_path)
    sizes = describe(kiln_run, exe)
    # Per step name: median duration over the bench runs.
    durations = {}
    for e in events:
        durations.setdefault(e["name"], []).append(e["dur"])
    median = {k: sorted(v)[len(v) // 2] for k, v in durations.items()}
    names = list(dict.fromkeys(e["name"] for e in events))
    copy = next((n for n in names if n.startswith("transfer")), None)
    if copy is None or median[copy] <= 0:
        print("| (no transfer step to measure the copy bandwidth with) |")
        return 1
    index = {n: i for i, n in enumerate(names)}
    copy_bytes = 2 * sizes.get(index[copy], 0)  # read + write
    copy_bw = copy_bytes / median[copy] / 1e3  # GB/s (bytes per us / 1e3)
    print(f"| device-to-device copy | {median[copy]:.1f} us | {copy_bw:.1f} GB/s | 1.00 |")
    for n in names:
        if n.startswith("transfer"):
            continue
        # Output bytes written plus the same read (elementwise/row-wise:
        # each kernel reads at least as much as it writes here).
        moved = 2 * sizes.get(index[n], 0)
        bw = moved / median[n] / 1e3 if median[n] > 0 else 0
        print(f"| {n} | {median[n]:.1f} us | {bw:.1f} GB/s | {bw / copy_bw:.2f} |")
    return 0


def gemm(generated_path, library_path):
    gen, lib = steps(generated_path), steps(library_path)

    def medians(events):
        d = {}
        for e in events:
            d.setdefault(e["name"], []).append(e["dur"])
        return {k: sorted(v)[len(v) // 2] for k, v in d.items()}

    g, l = medians(gen), medians(lib)
    for name in g:
        if "matmul" in name and name in l and l[name] > 0:
            print(f"| {name} | {g[name]:.1f} us | {l[name]:.1f} us | {g[name] / l[name]:.2f}x |")
    return 0


def predicted(name, trace_path, profile_path):
    durations = {}
    for e in steps(trace_path):
        step = e.get("args", {}).get("step")
        if step is not None:
            durations.setdefault(step, []).append(e["dur"])
    with open(profile_path) as f:
        profile = json.load(f)
    launch = profile["launch_us"]
    for k in profile["kernels"]:
        step = int(k["step"].split()[0].lstrip("#"))
        if step not in durations:
            continue
        measured = sorted(durations[step])[len(durations[step]) // 2]
        # Per launch, with the fixed launch cost the model reports apart.
        guess = k["predicted_us"] / k["launches"] + launch
        print(f"| {name} | {k['step']} | {k['kernel']} | {guess:.1f} (predicted) | "
              f"{measured:.1f} | {measured / guess:.2f} |")
    return 0


def step_medians(trace_path):
    """Step index -> median duration (us) of its traced runs, transfers left out."""
    durations = {}
    for e in steps(trace_path):
        step = e.get("args", {}).get("step")
        if step is not None and not e["name"].startswith("transfer"):
            durations.setdefault(step, []).append(e["dur"])
    return {s: sorted(d)[len(d) // 2] for s, d in durations.items()}


def ideal(title, target, trace_path, profile_path, library_path, peer_us):
    measured = step_medians(trace_path)
    with open(profile_path) as f:
        profile = json.load(f)
    kernels = [k for k in profile["kernels"] if int(k["step"].split()[0].lstrip("#")) in measured]
    ideal_us = sum(k["ideal_us"] / k["launches"] for k in kernels)
    predicted_us = sum(k["predicted_us"] / k["launches"] + profile["launch_us"] for k in kernels)
    ours = sum(measured.values())
    if library_path != "-":
        peer, peer_name = sum(step_medians(library_path).values()), "cuBLASLt"
    elif peer_us != "-":
        peer, peer_name = float(peer_us), "PyTorch"
    else:
        peer, peer_name = None, ""
    fraction = ideal_us / ours if ours else 0.0
    verdict = "" if target == "-" else ("met" if fraction >= float(target) else "MISSED")
    names = "+".join(k["kernel"] for k in kernels)
    peer_cells = f"{peer:.1f} ({peer_name}) | {ours / peer:.2f}" if peer else " | "
    print(f"| {title} | {names} | {ideal_us:.1f} | {predicted_us:.1f} (predicted) | {ours:.1f} | "
          f"{fraction:.2f} | {'' if target == '-' else '>= ' + target} {verdict} | {peer_cells} |")
    return 0


# The profile's counters and the Nsight Compute metrics that count the same
# thing on the hardware (cp.async's global reads are LDGSTS sectors there).
COUNTERS = [
    ("global load sectors", ["global_load_sectors"],
     ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum"]),
    ("global store sectors", ["global_store_sectors"],
     ["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]),
    ("shared wavefronts", ["shared_wavefronts"],
     ["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]),
    ("DRAM bytes", ["dram_bytes"], ["dram__bytes_read.sum", "dram__bytes_write.sum"]),
]


def ncu_rows(csv_path):
    """Kernel name -> summed metrics over its launches (ncu --page raw)."""
    import csv
    with open(csv_path) as f:
        lines = [line for line in f if line.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        return {}
    header, kernels = rows[0], {}
    for row in rows[1:]:
        if row == header or len(row) != len(header):
            continue
        record = dict(zip(header, row))
        if not record.get("ID", "").isdigit():  # the units row
            continue
        name = record["Kernel Name"].split("(")[0]
        total = kernels.setdefault(name, {"launches": 0})
        total["launches"] += 1
        for key, value in record.items():
            try:
                total[key] = total.get(key, 0.0) + float(value.replace(",", ""))
            except ValueError:
                pass
    return kernels


def counters(name, csv_path, profile_path):
    hardware = ncu_rows(csv_path)
    with open(profile_path) as f:
        profile = json.load(f)
    sampled = profile.get("sample_blocks", 0)
    for k in profile["kernels"]:
        hw = hardware.get(k["kernel"])
        if hw is None:
            continue
        # The profile sums its launches; ncu may have profiled a different
        # number of them (one run each, but warm-ups differ): per launch.
        cells = []
        for _, ours, theirs in COUNTERS:
            emu = sum(k[c] for c in ours) / k["launches"]
            measured = sum(hw.get(m, 0.0) for m in theirs) / hw["launches"]
            ratio = f"{measured / emu:.2f}" if emu else "-"
            cells.append(f"{emu:.0f} / {measured:.0f} ({ratio})")
        time = hw.get("gpu__time_duration.sum", 0.0) / hw["launches"] / 1e3  # ns -> us
        print(f"| {name} | {k['kernel']} | " + " | ".join(cells) +
              f" | {time:.1f} | {'sampled' if sampled else 'exact'} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "ideal":
        sys.exit(ideal(*sys.argv[2:]))
    if len(sys.argv) == 5 and sys.argv[1] == "counters":
        sys.exit(counters(sys.argv[2], sys.argv[3], sys.argv[4]))
    if len(sys.argv) == 5 and sys.argv[1] == "predicted":
        sys.exit(predicted(sys.argv[2], sys.argv[3], sys.argv[4]))
    if len(sys.argv) >= 4 and sys.argv[1] == "bandwidth":
        sys.exit(bandwidth(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "kiln-run"))
    if len(sys.argv) == 4 and sys.argv[1] == "gemm":
        sys.exit(gemm(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
