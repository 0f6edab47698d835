#!/usr/bin/env python3
"""Compiles every generated kernel (.cu files under the given folders, as
kilnc --emit=cuda writes them) with nvcc for each architecture and ptxas -v,
and fails on any spill. NVRTC (kilnc --kernel-report) and nvcc front ends
emit different PTX from the same source, and ptxas decides how many
registers to use, and whether to spill, from the PTX: a kernel that fits
under one may spill under the other.

  nvcc_spills.py NVCC ARCH[,ARCH...] DIR...

Prints one line per spilling kernel and architecture, then a summary."""
import concurrent.futures
import hashlib
import os
import pathlib
import re
import subprocess
import sys
import tempfile


def compile_one(nvcc, archs, path, scratch):
    gencodes = [f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]
    out = os.path.join(scratch, hashlib.sha1(str(path).encode()).hexdigest() + ".fatbin")
    p = subprocess.run([nvcc, "--fatbin", "-std=c++17", *gencodes, "-Xptxas", "-v",
                        "-o", out, str(path)], capture_output=True, text=True)
    return path, p.returncode, p.stdout + p.stderr


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    nvcc, archs, dirs = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
    # Identical kernels (the same model compiled twice) are compiled once.
    sources = {}
    for d in dirs:
        for path in sorted(pathlib.Path(d).rglob("*.cu")):
            sources.setdefault(hashlib.sha1(path.read_bytes()).hexdigest(), path)
    if not sources:
        sys.exit("nvcc_spills: no .cu files under " + " ".join(dirs))
    failures = 0
    entry = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
    spill = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
    with tempfile.TemporaryDirectory() as scratch, \
            concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 4) as pool:
        jobs = [pool.submit(compile_one, nvcc, archs, p, scratch) for p in sources.values()]
        for job in jobs:
            path, rc, log = job.result()
            if rc != 0:
                print(f"{path}: nvcc failed:\n{log}")
                failures += 1
                continue
            kernel = arch = None
            for line in log.splitlines():
                if m := entry.search(line):
                    kernel, arch = m.groups()
                elif (m := spill.search(line)) and kernel and (m.group(1) != "0" or
                                                              m.group(2) != "0"):
                    print(f"{path.parent.name}/{path.name}: {kernel} for {arch}: "
                          f"{line.strip()}")
                    failures += 1
    print(f"{len(sources)} kernels for {','.join(archs)}: "
          f"{'no spills' if not failures else str(failures) + ' failures'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
