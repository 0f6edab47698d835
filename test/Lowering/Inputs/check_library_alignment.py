#!/usr/bin/env python3
"""Reads an execution plan (kilnc --emit=plan) on stdin and checks that every
arena buffer a library call (cuBLASLt `gemm`, cuDNN `conv`) reads or writes,
and its workspace, starts on a 256-byte boundary. Prints one line per
violation and exits 1 if there are any."""
import re
import sys

ALIGN = 256
STEP = re.compile(r"^\s*(%[\w.$-]+)(?::(\d+))? = exec\.step\(([^)]*)\)")
OFFSETS = re.compile(r"offsets = array<i64(?::\s*([0-9, ]*))?>")
WORKSPACE = re.compile(r"workspace_offset = (\d+)")

offsets = {}   # SSA value -> arena offset
calls = []     # (line number, result values, operands, workspace offset)
for number, line in enumerate(sys.stdin, 1):
    step = STEP.match(line)
    if not step:
        continue
    name, count, operands = step.group(1), step.group(2), step.group(3)
    found = OFFSETS.search(line)
    values = [int(v) for v in found.group(1).split(",")] if found and found.group(1) else []
    results = [name] if count is None else [f"{name}#{i}" for i in range(int(count))]
    for result, offset in zip(results, values):
        offsets[result] = offset
    if re.search(r"[{ ](gemm|conv) = \{", line):
        workspace = WORKSPACE.search(line)
        calls.append((number, results, [o.strip() for o in operands.split(",") if o.strip()],
                      int(workspace.group(1)) if workspace else None))

if not calls:
    sys.exit("check_library_alignment: the plan has no library calls")
bad = 0
buffers = 0
for number, results, operands, workspace in calls:
    for value in results + [o for o in operands if o in offsets]:
        buffers += 1
        if offsets[value] % ALIGN:
            print(f"line {number}: {value} at arena offset {offsets[value]}, "
                  f"not a multiple of {ALIGN}")
            bad += 1
    if workspace is not None and workspace % ALIGN:
        print(f"line {number}: workspace at arena offset {workspace}, not a multiple of {ALIGN}")
        bad += 1
print(f"{len(calls)} library calls, {buffers} arena buffers: "
      f"{'all' if not bad else bad} {'aligned' if not bad else 'misaligned'}")
sys.exit(1 if bad else 0)
