#!/usr/bin/env python3
"""Benchmark of bringing your own image (issue 29). Figures only, never pass/fail on time.
The last line is one JSON object.

  import:      `stockade image import oci:LAYOUT` of a ~150 MiB image (the python image's root
               as one gzip layer, plus a layer of mixed files), with the real skopeo; split
               from its output into fetch (skopeo), apply (hostd/oci: verify, decompress,
               write the tree) and pack (root.ext4 + manifest)
  floor:       `tar -xzf` of the same gzip layer blobs into an empty folder, one after the
               other, in the same run: what unpacking those bytes costs on this disk with
               GNU tar, no verification, no packing
  first guest: a daemon with a new pool of the imported image and no snapshot of it, from
               the daemon's start to the pool's first idle guest (cold boot, Ready, save)

    tests/bench/run image [--quick] [--mib N] [--no-guest]
--quick: a ~24 MiB image (the minimal root plus 20 MiB) and no guest.
"""
import argparse
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from stockade_fixture import Daemon, skip  # noqa: E402
import oci_layouts as L  # noqa: E402

BUILD = os.environ.get("STOCKADE_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
IMAGES = os.environ.get("STOCKADE_IMAGE_DIR") or os.path.join(BUILD, "images")
CLI = os.path.join(BUILD, "tools", "stockade")
MIB = 1 << 20


def root_tar(image, work):
    tree = os.path.join(work, "tree")
    os.makedirs(tree)
    subprocess.run(["debugfs", "-R", f"rdump / {tree}", os.path.join(IMAGES, image, "root.ext4")],
                   check=True, capture_output=True)
    shutil.rmtree(os.path.join(tree, "lost+found"), ignore_errors=True)
    out = os.path.join(work, "root.tar")
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
        for name in sorted(os.listdir(tree)):
            tf.add(os.path.join(tree, name), arcname=name)
    shutil.rmtree(tree)
    with open(out, "rb") as f:
        return f.read()


def filler_tar(mib):
    """mib MiB of files: half random bytes (incompressible), half repeated text."""
    rnd = random.Random(29)
    entries, left, i = [L.dir("opt/filler")], mib * MIB, 0
    while left > 0:
        size = min(left, 256 * 1024)
        if i % 2:
            data = rnd.randbytes(size)
        else:
            data = (b"line %d of a text file that compresses well\n" % i) * (size // 40)
        entries.append(L.file(f"opt/filler/f{i:05}", data[:size]))
        left -= size
        i += 1
    return L.tar_layer(entries)


def floor_tar(layout, work):
    """tar -xzf of every layer blob, sequentially, into one folder: seconds."""
    with open(os.path.join(layout, "index.json")) as f:
        mdigest = json.load(f)["manifests"][0]["digest"]
    blob = lambda d: os.path.join(layout, "blobs", "sha256", d.split(":")[1])  # noqa: E731
    with open(blob(mdigest)) as f:
        layers = [x["digest"] for x in json.load(f)["layers"]]
    dest = os.path.join(work, "floor")
    os.makedirs(dest)
    subprocess.run(["sync"])
    t0 = time.monotonic()
    for d in layers:
        subprocess.run(["tar", "-xzf", blob(d), "-C", dest, "--no-same-owner"], check=True)
    subprocess.run(["sync", "-f", dest])
    secs = time.monotonic() - t0
    shutil.rmtree(dest)
    return secs


def do_import(layout, imgs, name):
    subprocess.run(["sync"])
    t0 = time.monotonic()
    p = subprocess.run([CLI, "image", "import", f"oci:{layout}:v1", "--name", name, "--force",
                        "--image-dir", imgs], capture_output=True, text=True)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(p.stdout + p.stderr)
    apply_s = sum(float(x) for x in re.findall(r"^layer \d+/\d+ .* ([\d.]+) s  verified$",
                                               p.stdout, re.M))
    return secs, apply_s, p.stdout


def timed_skopeo(layout, work):
    dest = os.path.join(work, "skopeo-only")
    t0 = time.monotonic()
    subprocess.run(["skopeo", "--override-os", "linux", "--override-arch", "amd64", "copy",
                    "--quiet", f"oci:{layout}:v1", f"oci:{dest}:x"], check=True)
    secs = time.monotonic() - t0
    shutil.rmtree(dest)
    return secs


def first_guest(imgs, name):
    os.environ["STOCKADE_IMAGE_DIR"] = imgs
    state = tempfile.mkdtemp(prefix="stockade-bench-image-state.")
    os.chmod(state, 0o711)
    try:
        t0 = time.monotonic()
        with Daemon(pools={"byo": dict(image=name, warm=1, slots=1)}, state_dir=state,
                    prefix=f"stkbi{os.getpid() % 100000}-") as d:
            d.wait(d.pool_full, 900, "the new pool's first guest")
            return time.monotonic() - t0, d.get("/v1/pool")["accel"]
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--mib", type=int, default=None, help="filler MiB (default 92; quick 20)")
    ap.add_argument("--no-guest", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        skip("needs root")
    if not shutil.which("skopeo"):
        skip("skopeo is not installed (.ci/packages)")
    base = "minimal" if a.quick else "python"
    if not os.path.exists(os.path.join(IMAGES, base, "manifest.json")):
        skip(f"the {base} image is not built in {IMAGES}")
    work = tempfile.mkdtemp(prefix="stockade-bench-image.")
    os.chmod(work, 0o711)  # QEMU (libvirt-qemu) opens the image's files by path
    try:
        layers = [root_tar(base, work), filler_tar(a.mib or (20 if a.quick else 92))]
        unpacked_mib = sum(len(t) for t in layers) / MIB
        layout = os.path.join(work, "layout")
        L.write_layout(layout, layers, L.config(env=["PATH=/usr/bin:/bin"]))
        del layers
        imgs = os.path.join(work, "imgs")
        shutil.copytree(os.path.join(IMAGES, "minimal"), os.path.join(imgs, "minimal"))
        floor_s = floor_tar(layout, work)
        skopeo_s = timed_skopeo(layout, work)
        import_s, apply_s, out = do_import(layout, imgs, "byo")
        print(out, end="")
        with open(os.path.join(imgs, "byo", "manifest.json")) as f:
            m = json.load(f)
        root_mib = next(f["size"] for f in m["files"] if f["name"] == "root.ext4") / MIB
        guest_s, accel = (None, None) if a.quick or a.no_guest else first_guest(imgs, "byo")
        res = {
            "image_unpacked_mib": round(unpacked_mib, 1),
            "root_ext4_mib": round(root_mib, 1),
            "import_s": round(import_s, 2),
            "import_mib_per_s": round(unpacked_mib / import_s, 1),
            "fetch_s": round(skopeo_s, 2),
            "apply_s": round(apply_s, 2),
            "apply_mib_per_s": round(unpacked_mib / apply_s, 1) if apply_s else None,
            "pack_s": round(import_s - skopeo_s - apply_s, 2),
            "tar_floor_s": round(floor_s, 2),
            "tar_floor_mib_per_s": round(unpacked_mib / floor_s, 1),
            "apply_over_floor": round(apply_s / floor_s, 2),
            "import_over_floor": round(import_s / floor_s, 2),
            "build_cold_s": None,
            "build_cached_s": None,
            "first_guest_ready_s": round(guest_s, 1) if guest_s else None,
            "accel": accel,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"import {res['import_s']} s ({res['import_mib_per_s']} MiB/s of "
          f"{res['image_unpacked_mib']} MiB unpacked): fetch {res['fetch_s']} s, apply "
          f"{res['apply_s']} s, pack {res['pack_s']} s; tar -xzf floor {res['tar_floor_s']} s; "
          f"first guest of the new pool ready in {res['first_guest_ready_s']} s")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
