#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_manifest: Manifest frames an honest runner sends, and the
lies of issue 13 (.., absolute, a file over the disk, duplicates, orphans, totals, no end).
Hand-encoded protobuf, no dependencies. Run: python3 tests/fuzz/seeds_manifest.py"""
import hashlib
import os
import struct



from seeds import field  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_manifest")
FILE, DIR = 1, 2


def entry(path, typ, size=0, mtime=1_700_000_000_000_000_000, mode=0o644):
    e = field(1, 2, path.encode()) + field(2, 0, typ) + field(4, 0, mtime) + field(5, 0, mode)
    return field(1, 2, e + (field(3, 0, size) if size else b""))


def manifest(entries, last=True, total=None, total_bytes=None, truncated=False, req=7):
    body = b"".join(entry(*e) for e in entries)
    if last:
        body += field(2, 0, 1)
        body += field(3, 0, len(entries) if total is None else total) if (total or entries) else b""
        nbytes = sum(e[2] for e in entries if len(e) > 2) if total_bytes is None else total_bytes
        body += field(4, 0, nbytes) if nbytes else b""
        body += field(5, 0, 1) if truncated else b""
    msg = field(1, 0, req) + field(16, 2, body)
    return struct.pack(">I", len(msg)) + msg


SEEDS = {
    "honest": manifest([("a", DIR), ("a/x", FILE, 5), ("b", FILE, 0), ("a/e", DIR)]),
    "two_frames": manifest([("d", DIR), ("d/1", FILE, 10)], last=False)
    + manifest([("d/2", FILE, 20)], total=3, total_bytes=30),
    "dotdot": manifest([("../etc/passwd", FILE, 1)]),
    "absolute": manifest([("/etc/passwd", FILE, 1)]),
    "over_disk": manifest([("big", FILE, 1 << 40)]),
    "duplicate": manifest([("a", FILE, 1), ("a", FILE, 1)]),
    "orphan": manifest([("x/y", FILE, 1)]),
    "totals": manifest([("a", FILE, 1)], total=5),
    "truncated": manifest([("a", FILE, 1)], truncated=True),
    "no_end": b"".join(manifest([(f"f{i}", FILE, 1)], last=False) for i in range(80)),
    "deep": manifest([("/".join(["d"] * i), DIR) for i in range(1, 9)]),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds in {OUT}")
