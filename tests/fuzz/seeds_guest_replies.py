#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_guest_replies: 4 bytes of caps, then GuestMsg frames an
honest runner sends (a file mirrored in chunks, a removal, a fetch, a listing) and the lies
(chunks out of order, past the budget, a file's size changing mid-way, an end before the
listed size). Hand-encoded protobuf. Run: python3 tests/fuzz/seeds_guest_replies.py"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seeds import field  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_guest_replies")


def frame(body_num, body, req=0):
    msg = (field(1, 0, req) if req else b"") + field(body_num, 2, body)
    return struct.pack(">I", len(msg)) + msg


def changed(path, size, offset=0, data=b"", last=False, removed=False, over=False, mode=0o644):
    b = field(1, 2, path.encode()) + (field(2, 0, size) if size else b"") + field(3, 0, mode)
    b += field(4, 0, 1_700_000_000_000_000_000)
    b += (field(5, 0, offset) if offset else b"") + (field(6, 2, data) if data else b"")
    b += (field(7, 0, 1) if last else b"") + (field(8, 0, 1) if removed else b"")
    b += field(9, 0, 1) if over else b""
    return frame(9, b)


def file_data(offset, data, eof, size):
    b = (field(1, 0, offset) if offset else b"") + (field(2, 2, data) if data else b"")
    b += (field(3, 0, 1) if eof else b"") + (field(4, 0, size) if size else b"")
    return frame(7, b, req=5)


def entry(name, typ, target=b""):
    return field(1, 2, field(1, 2, name) + field(2, 0, typ) + field(4, 0, 0o644)
                 + (field(6, 2, target) if target else b""))


CAPS = bytes([64, 64, 4, 16])  # budget 1024, largest file 512, 4 files, fetch cap 128
SEEDS = {
    "mirror_honest": CAPS + changed("a.txt", 10, 0, b"01234", False)
    + changed("a.txt", 10, 5, b"56789", True) + changed("d/b", 3, 0, b"xyz", True),
    "mirror_removed": CAPS + changed("a", 0, removed=True) + changed("dir", 0, removed=True),
    "mirror_out_of_order": CAPS + changed("a", 10, 5, b"56789", True)
    + changed("a", 10, 0, b"01234") + changed("b", 10, 5, b"56789", True)
    + changed("a", 12, 5, b"56789", True),
    "mirror_offset_gap": CAPS + changed("a", 10, 0, b"01234") + changed("a", 10, 7, b"789", True),
    "mirror_over_budget": bytes([1, 64, 4, 16]) + changed("big", 40, 0, b"x" * 20)
    + changed("big", 40, 20, b"y" * 20, True) + changed("w", 9, over=True),
    "mirror_file_cap": bytes([64, 64, 1, 16]) + changed("a", 1, 0, b"1", True)
    + changed("b", 1, 0, b"2", True),
    "mirror_short_end": CAPS + changed("s", 100, 0, b"abc", False) + changed("s", 100, 3, b"", True),
    "fetch_honest": CAPS + file_data(0, b"hello ", False, 11) + file_data(6, b"world", True, 11),
    "fetch_lies": CAPS + file_data(3, b"abc", False, 9) + file_data(0, b"", False, 9)
    + file_data(0, b"z" * 200, False, 300) + file_data(0, b"abc", True, 5),
    "fetch_listed_size": bytes([64, 64, 4, 2]) + file_data(0, b"1234", False, 8)
    + file_data(4, b"5678", True, 8),
    "fetch_short_end": bytes([64, 64, 4, 2]) + file_data(0, b"1234", True, 8),
    "fs_result": CAPS + frame(8, entry(b"a", 1) + entry(b"l", 3, b"/etc/passwd")
                               + entry(b"d", 2) + field(2, 0, 1), req=3),
    "fs_result_bad": CAPS + frame(8, entry(b"", 1)) + frame(8, entry(b"x", 1, b"t"))
    + frame(8, entry(b"../x", 2)),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {OUT}")
