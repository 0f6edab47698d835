#!/usr/bin/env python3
"""Changes one field of a kernel step in a .kx executable and reseals it, so
a test can show what the runtime does with an executable whose container is
valid (FlatBuffers, checksum) but whose contents disagree:
    edit_kx.py IN.kx OUT.kx KERNEL FIELD JSON-VALUE
KERNEL names the step by its kernel. With KERNEL and FIELD both "-" it
changes nothing, writing the executable back through the same flatc round
trip (so a test can show the round trip alone keeps it as it was)."""

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

src, dst, kernel, field = sys.argv[1:5]
data = open(src, "rb").read()
with tempfile.TemporaryDirectory() as tmp:
    payload = os.path.join(tmp, "payload.bin")
    open(payload, "wb").write(data[HEADER:])
    subprocess.run(["flatc", "--json", "--raw-binary", "--strict-json", "-o", tmp,
                    SCHEMA, "--", payload], check=True)
    tree = json.load(open(os.path.join(tmp, "payload.json")))
    if kernel != "-":
        steps = [s for s in tree["steps"] if s.get("kernel") == kernel]
        if len(steps) != 1:
            sys.exit(f"edit_kx.py: {len(steps)} steps launch kernel '{kernel}'")
        steps[0][field] = json.loads(sys.argv[5])
    json.dump(tree, open(os.path.join(tmp, "payload.json"), "w"))
    rebuilt = os.path.join(tmp, "rebuilt")
    subprocess.run(["flatc", "--binary", "-o", rebuilt, SCHEMA,
                    os.path.join(tmp, "payload.json")], check=True)
    # Named by the schema's file_extension.
    body = open(os.path.join(rebuilt, "payload.kx"), "rb").read()
header = bytearray(data[:HEADER])
struct.pack_into("<Q", header, 16, len(body))
open(dst, "wb").write(bytes(header) + body)
subprocess.run([sys.executable, RESEAL, dst, dst], check=True)
