#!/usr/bin/env python3
"""Edits a .kx executable and reseals it, so a test can show what the
runtime does with an executable whose container is valid (FlatBuffers,
checksum) but whose contents disagree:
    edit_kx.py IN.kx OUT.kx [STATEMENT...]
Each STATEMENT is Python run on the payload as flatc's JSON, `exe`, with
`step(KERNEL)` (the step launching that kernel) and `code(TARGET, FORMAT)`
(a device code table) to hand, e.g.
    "step('kiln_matmul_1')['block'] = 512"
    "code('cuda-emu', 'elf-so')['data'][4000:] = []"
Without statements it changes nothing, writing the executable back through
the same flatc round trip (so a test can show the round trip alone keeps it
as it was)."""

import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "..", "include", "kiln", "Runtime",
                      "ExecutableFormat.fbs")
RESEAL = os.path.join(HERE, "..", "fuzz", "reseal.py")
HEADER = 64


def only(matches, what):
    if len(matches) != 1:
        sys.exit(f"edit_kx.py: {len(matches)} matches for {what}")
    return matches[0]


src, dst, statements = sys.argv[1], sys.argv[2], sys.argv[3:]
data = open(src, "rb").read()
with tempfile.TemporaryDirectory() as tmp:
    payload = os.path.join(tmp, "payload.bin")
    open(payload, "wb").write(data[HEADER:])
    subprocess.run(["flatc", "--json", "--raw-binary", "--strict-json", "-o", tmp,
                    SCHEMA, "--", payload], check=True)
    exe = json.load(open(os.path.join(tmp, "payload.json")))
    scope = {
        "exe": exe,
        "step": lambda kernel: only([s for s in exe["steps"] if s.get("kernel") == kernel],
                                    f"kernel {kernel}"),
        "code": lambda target, fmt: only(
            [c for c in exe.get("device_code", [])
             if c.get("target") == target and c.get("format") == fmt], f"{target} {fmt}"),
    }
    for statement in statements:
        exec(statement, scope)
    json.dump(exe, open(os.path.join(tmp, "payload.json"), "w"))
    rebuilt = os.path.join(tmp, "rebuilt")
    subprocess.run(["flatc", "--binary", "-o", rebuilt, SCHEMA,
                    os.path.join(tmp, "payload.json")], check=True)
    # Named by the schema's file_extension.
    body = open(os.path.join(rebuilt, "payload.kx"), "rb").read()
header = bytearray(data[:HEADER])
struct.pack_into("<Q", header, 16, len(body))
open(dst, "wb").write(bytes(header) + body)
subprocess.run([sys.executable, RESEAL, dst, dst], check=True)
