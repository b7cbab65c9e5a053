#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_tarwriter (issue 14): trees whose long-named files hold
forged tar headers, paths at and just over the writer's 4096-byte cap, odd name bytes.

Run from anywhere: python3 tests/fuzz/seeds_tarwriter.py. Input format: fuzz_tarwriter.c."""
import os
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_tarwriter")


def forged():
    evil = tarfile.TarInfo("evil")
    evil.type, evil.linkname = tarfile.SYMTYPE, "/etc/passwd"
    suid = tarfile.TarInfo("/usr/local/bin/rootme")
    suid.mode = 0o4755
    return evil.tobuf(tarfile.USTAR_FORMAT) + suid.tobuf(tarfile.USTAR_FORMAT)


def op_dir(parent, length, fill, last=None):
    """parent: 0 = the root, k = the k-th directory made so far."""
    return bytes([parent << 1, length - 1, fill, last if last is not None else fill])


def op_file(parent, length, fill, content, last=None):
    return (bytes([(parent << 1) | 1, length - 1, fill, last if last is not None else fill])
            + len(content).to_bytes(2, "little") + content)


def chain(first_parent, lengths, fill):
    """Directories nested one in the next; returns ops and the last one's index."""
    ops, parent = b"", first_parent
    for i, n in enumerate(lengths):
        ops += op_dir(parent, n, fill + i)
        parent = first_parent + i + 1 if first_parent == 0 else parent + 1
    return ops


def seeds():
    f = forged()
    yield "finding_600", b"\x05" + chain(0, [200, 200], ord("a")) + op_file(2, 200, ord("c"), f)
    # 20 directories of 200 (+ '/') = 4020 bytes, then names of 76 (4096: kept) and 77 (over)
    deep = chain(0, [200] * 20, ord("A"))
    yield "at_limit", b"\x2a" + deep + op_file(20, 76, ord("k"), f + b"kept")
    yield "over_limit", b"\x91" + deep + op_file(20, 77, ord("o"), f) + op_dir(20, 75, ord("d"))
    yield "odd_bytes", b"\x07" + op_dir(0, 1, ord("."), ord(".")) + op_file(
        1, 3, 0x0A, b"newline\n", 0x1B) + op_file(0, 255, 0xFF, b"", 0x2F) + op_file(
        0, 101, ord("n"), f * 3) + op_dir(0, 100, ord("h"))
    yield "many", b"\x33" + b"".join(op_file(0, 1 + i % 40, ord("a") + i, bytes([i]) * (i * 37))
                                      for i in range(40))


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(OUT, "seed_" + name), "wb") as fh:
            fh.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
