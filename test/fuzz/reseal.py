#!/usr/bin/env python3
"""Recomputes a .kx file's payload checksum (as the loader fuzzer does
before loading), so a fuzzer finding reproduces with kiln-run:
    reseal.py IN.kx OUT.kx"""

import struct
import sys

BASIS, PRIME, MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def payload_checksum(data):
    lanes = [BASIS ^ l for l in range(8)]
    blocks = len(data) // 64
    for b in range(blocks):
        words = struct.unpack_from("<8Q", data, b * 64)
        lanes = [((lane ^ w) * PRIME) & MASK for lane, w in zip(lanes, words)]
    h = BASIS
    for lane in lanes:
        for k in range(8):
            h = ((h ^ ((lane >> (8 * k)) & 0xFF)) * PRIME) & MASK
    for byte in data[blocks * 64:]:
        h = ((h ^ byte) * PRIME) & MASK
    return h


data = bytearray(open(sys.argv[1], "rb").read())
if len(data) > 64:
    struct.pack_into("<Q", data, 24, payload_checksum(bytes(data[64:])))
open(sys.argv[2], "wb").write(data)
