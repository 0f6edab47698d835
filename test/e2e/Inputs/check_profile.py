#!/usr/bin/env python3
"""Reads a kiln-run --profile file: checks that every kernel has exactly the
documented fields with sane values, and prints one line per kernel."""
import json
import sys

FIELDS = ["kernel", "step", "launches", "grid", "block", "registers", "shared_bytes",
          "occupancy", "global_load_requested_bytes", "global_load_sectors",
          "global_store_requested_bytes", "global_store_sectors", "dram_bytes",
          "shared_requests", "shared_wavefronts", "tensor_core_flops", "cuda_core_flops",
          "predicted_us", "ideal_us", "limiter", "locations"]

profile = json.load(open(sys.argv[1]))
assert "predicted" in profile["predicted"], profile["predicted"]
print(f"gpu: {profile['gpu']}, launch {profile['launch_us']} us apart")
for k in profile["kernels"]:
    assert list(k) == FIELDS, sorted(set(k) ^ set(FIELDS))
    assert k["launches"] >= 1 and k["grid"] >= 1 and k["block"] >= 32
    assert k["registers"] > 0 and 0 < k["occupancy"] <= 1, (k["registers"], k["occupancy"])
    assert k["global_load_sectors"] * 32 >= k["global_load_requested_bytes"] > 0
    assert k["global_store_sectors"] * 32 >= k["global_store_requested_bytes"] > 0
    assert k["shared_wavefronts"] >= k["shared_requests"]
    assert 0 < k["ideal_us"] and 0 < k["predicted_us"]
    load = k["global_load_requested_bytes"] / (32 * k["global_load_sectors"])
    store = k["global_store_requested_bytes"] / (32 * k["global_store_sectors"])
    waves = k["shared_wavefronts"] / k["shared_requests"] if k["shared_requests"] else 1.0
    print(f"{k['kernel']}: {k['step']}; launches {k['launches']}, load {load:.2f}, "
          f"store {store:.2f}, wavefronts/request {waves:.2f}, tensor core flops "
          f"{k['tensor_core_flops']}, limiter {k['limiter']}, at {', '.join(k['locations'])}")
