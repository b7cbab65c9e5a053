#!/usr/bin/env python3
"""Seeds for fuzz_pausefile: a small QEMU 7.2 migration stream of the shape a paused clone
sends (configuration with x-ignore-shared, the "ram" section's setup, pages of the template's
block equal and unequal to the fuzz target's template, a zero page, another block, RAM's end,
a device section passed through), and a few stored files that must be refused."""
import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "fuzz_pausefile")
os.makedirs(out, exist_ok=True)


def name(s):
    return bytes([len(s)]) + s


be32 = lambda v: struct.pack(">I", v)
be64 = lambda v: struct.pack(">Q", v)
PAGE, ZERO, CONT, EOS, SIZE = 0x08, 0x02, 0x20, 0x10, 0x04

s = be32(0x5145564D) + be32(3)
s += b"\x07" + be32(13) + b"pc-i440fx-7.2"
s += b"\x05" + name(b"configuration/capabilities") + be32(1) + be32(1) + name(b"x-ignore-shared")
s += b"\x01" + be32(2) + name(b"ram") + be32(0) + be32(4)
s += be64((3 * 4096 + 4096) | SIZE)
s += name(b"stockade-ram") + be64(3 * 4096) + be64(0)
s += name(b"pc.bios") + be64(4096) + be64(0xFFFC0000)
s += be64(EOS) + b"\x7e" + be32(2)
s += b"\x02" + be32(2)
s += be64(0 | PAGE) + name(b"stockade-ram") + bytes(4096)          # equals the template's: dropped
s += be64(4096 | PAGE | CONT) + b"\x05" * 4096                      # differs: kept
s += be64(8192 | ZERO | CONT) + b"\x00"                             # template page is 0x02: kept
s += be64(0 | PAGE) + name(b"pc.bios") + b"\xaa" * 4096             # another block: kept
s += be64(EOS) + b"\x7e" + be32(2)
s += b"\x03" + be32(2) + be64(4096 | PAGE) + name(b"stockade-ram") + b"\x01" * 4096 + be64(EOS)
s += b"\x7e" + be32(2)
s += b"\x04" + be32(3) + name(b"timer") + be32(0) + be32(2) + b"device state bytes"
s += b"\x7e" + be32(3) + b"\x00" + b"\x06" + be32(2) + b"{}"

seeds = {
    "seed_stream": b"\x01" + s,
    "seed_stream_cut": b"\x01" + s[: len(s) // 2],
    "seed_stream_unknown_flag": b"\x01" + s.replace(be64(8192 | ZERO | CONT), be64(8192 | 0x100 | CONT)),
    "seed_file_garbage": b"\x00" + b"STKPAUSE" + bytes(200),
    "seed_file_short": b"\x00" + b"STKPAUSE\x01\x00\x00\x00",
}
for k, v in seeds.items():
    with open(os.path.join(out, k), "wb") as f:
        f.write(v)
