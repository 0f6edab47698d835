"""Copies a kiln executable with its header's format version replaced
(little-endian uint32 at byte 8; the payload checksum does not cover it)."""
import struct
import sys

source, target, version = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(source, "rb") as f:
    data = f.read()
with open(target, "wb") as f:
    f.write(data[:8] + struct.pack("<I", version) + data[12:])
