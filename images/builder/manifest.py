"""manifest.json and content_hash (the daemon keys its snapshots on content_hash).

content_hash = sha256 of the UTF-8 text
    "stockade-image-v1\n" + "<name> <sha256>\n" for each file, sorted by name
    + "cmdline <kernel command line>\n"
so it changes whenever any file or the command line changes, and nothing else.
"""

import hashlib
import json

FORMAT = 1
FILES = ("vmlinux", "initramfs.cpio", "root.ext4")


def content_hash(files, cmdline):
    h = hashlib.sha256(b"stockade-image-v1\n")
    for f in sorted(files, key=lambda f: f["name"]):
        h.update(f"{f['name']} {f['sha256']}\n".encode())
    h.update(f"cmdline {cmdline}\n".encode())
    return h.hexdigest()


def render(*, name, description, kernel, cmdline, files, modules, packages, runner_sha256,
           epoch):
    doc = {
        "format": FORMAT,
        "name": name,
        "description": description,
        "content_hash": content_hash(files, cmdline),
        "cmdline": cmdline,
        "kernel": kernel,
        "files": sorted(files, key=lambda f: f["name"]),
        "modules": modules,
        "runner_sha256": runner_sha256,
        "packages": dict(sorted(packages.items())),
        "source_date_epoch": epoch,
    }
    return json.dumps(doc, indent=2) + "\n"
