#!/usr/bin/python3
"""Pack an imported root tree into a Stockade image: root.ext4, plus the kernel and
initramfs of a project image, plus manifest.json (images/README.md, "Imported images").

    pack-image.py --tree <scratch>/root --meta <scratch>/meta.json --name NAME \
                  --kernel-from <image_dir>/minimal --out <image_dir>/NAME --work <scratch> \
                  --epoch 1767225600

`stockade image import` calls this after hostd/oci applied the layers (the tree is then the
project's own: no device nodes, no setuid bits, names checked). root.ext4 is made exactly as
the builder makes it (builder/ext4.py: sorted, UUID and hash seed from the tree's digest,
fixed atime/ctime), except that files keep the layers' mtimes (a Python .pyc checks its
source's mtime). The same tree gives the same bytes, so the same image gives the same
content_hash. The kernel and initramfs (with the runner) are copied from --kernel-from after
checking them against its manifest.
"""

import argparse
import json
import os
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from builder import ext4, manifest  # noqa: E402
from builder.util import BuildError, log, sha256_file, write_file  # noqa: E402

MARGIN_PERCENT = 5
MARGIN_MIB = 4


def base_files(base):
    """The project image's manifest, with its vmlinux and initramfs checked."""
    with open(os.path.join(base, "manifest.json")) as f:
        doc = json.load(f)
    if "origin" in doc:
        raise BuildError(f"{base} is an imported image: --kernel-from names a project image")
    listed = {f["name"]: f for f in doc["files"]}
    for name in ("vmlinux", "initramfs.cpio"):
        path = os.path.join(base, name)
        if name not in listed or sha256_file(path) != listed[name]["sha256"]:
            raise BuildError(f"{path} does not match {base}/manifest.json: rebuild that image")
    return doc


def install(tmp, out, names):
    """Move each new file into out (manifest last); a file with the same bytes stays. Modes
    are set, not left to the umask: QEMU (libvirt-qemu) must read the files."""
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o755)
    for name in names:
        os.chmod(os.path.join(tmp, name), 0o644)
        src, dst = os.path.join(tmp, name), os.path.join(out, name)
        if os.path.exists(dst) and sha256_file(dst) == sha256_file(src):
            os.remove(src)
        else:
            os.replace(src, dst)


def pack(args):
    with open(args.meta) as f:
        meta = json.load(f)
    base = base_files(args.kernel_from)
    tmp = os.path.join(args.work, "pack")
    os.makedirs(tmp, exist_ok=True)
    image = os.path.join(tmp, "root.ext4")
    # The label is not the name: the same image imported under two names is the same bytes.
    ext4.make(args.tree, image, label="stockade-oci", epoch=args.epoch,
              margin_pct=MARGIN_PERCENT, margin_mib=MARGIN_MIB, keep_mtime=True)
    for name in ("vmlinux", "initramfs.cpio"):
        shutil.copyfile(os.path.join(args.kernel_from, name), os.path.join(tmp, name))
    files = [{"name": n, "size": os.path.getsize(os.path.join(tmp, n)),
              "sha256": sha256_file(os.path.join(tmp, n))} for n in manifest.FILES]
    doc = json.loads(manifest.render(
        name=args.name, description=f"imported from {meta['origin']['source']}",
        kernel=base["kernel"], cmdline=base["cmdline"], files=files, modules=base["modules"],
        packages={}, runner_sha256=base["runner_sha256"], epoch=args.epoch))
    doc["origin"] = meta["origin"]
    doc["config"] = meta["config"]
    doc["unpack"] = meta["unpack"]
    write_file(os.path.join(tmp, "manifest.json"), json.dumps(doc, indent=2) + "\n")
    install(tmp, args.out, list(manifest.FILES) + ["manifest.json"])
    log(f"{args.name}: content_hash {doc['content_hash'][:16]}, root.ext4 "
        f"{files[2]['size'] / 1048576:.1f} MiB")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tree", required=True)
    p.add_argument("--meta", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--kernel-from", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--epoch", type=int, required=True)
    args = p.parse_args()
    try:
        pack(args)
    except (BuildError, OSError, ValueError, KeyError) as e:
        log(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
