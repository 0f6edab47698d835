#!/usr/bin/env python3
"""Reads a kiln-run trace: prints its tracks, its step count, how many steps
name their model locations, and whether steps of different streams
overlapped in time."""
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
tracks = [e["args"]["name"] for e in events if e.get("name") == "thread_name"]
steps = [e for e in events if e["ph"] == "X"]
print("tracks: " + ", ".join(tracks))
print(f"steps: {len(steps)}")
# Every step names the model locations of its ops (kiln-run --trace).
located = [e for e in steps if e.get("args", {}).get("locations")]
print(f"located: {len(located)} of {len(steps)}")
overlap = any(a["tid"] != b["tid"] and a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]
              for a in steps for b in steps)
print(f"concurrent: {overlap}")
