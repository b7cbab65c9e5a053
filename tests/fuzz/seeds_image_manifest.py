#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_image_manifest: a manifest of the fuzz target's scratch image
(its three files hold their own names) that both readers take, and the same with one field
wrong at a time. Run: python3 tests/fuzz/seeds_image_manifest.py"""
import hashlib
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_image_manifest")
NAMES = ["initramfs.cpio", "root.ext4", "vmlinux"]


def manifest(cmdline="console=ttyS0 quiet", name="img", fmt=1, files=None, content=None, **extra):
    files = files if files is not None else [
        {"name": n, "size": len(n), "sha256": hashlib.sha256(n.encode()).hexdigest()}
        for n in NAMES]
    h = hashlib.sha256(b"stockade-image-v1\n")
    for f in files:
        h.update(f"{f['name']} {f['sha256']}\n".encode())
    h.update(f"cmdline {cmdline}\n".encode())
    m = {"format": fmt, "name": name, "kernel": {"release": "6.1.0-57-amd64"}, "files": files,
         "cmdline": cmdline, "content_hash": content or h.hexdigest(), **extra}
    return json.dumps(m, indent=1).encode()


good = json.loads(manifest())
SEEDS = {
    "good": manifest(),
    "wrong_hash": manifest(content="0" * 64),
    "wrong_size": manifest(files=[dict(good["files"][0], size=99)] + good["files"][1:]),
    "order": manifest(files=list(reversed(good["files"]))),
    "other_name": manifest(name="python"),
    "format2": manifest(fmt=2),
    "cmdline_newline": manifest(cmdline="a\nb"),
    "cmdline_long": manifest(cmdline="x" * 2049),
    "kernel_escape": manifest().replace(b"6.1.0-57-amd64", b"\\u001b[31mred\\u0007"),
    "upper_hash": manifest(content="A" * 64),
    "dup_key": b'{"name":"img","name":"x","content_hash":"' + b"a" * 64 + b'","cmdline":""}',
    "not_object": b'["img"]',
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for k, v in SEEDS.items():
        with open(os.path.join(OUT, k), "wb") as f:
            f.write(v)
    print(f"wrote {len(SEEDS)} seeds to {OUT}")
