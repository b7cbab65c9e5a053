#!/usr/bin/python3
"""A stand-in for skopeo (STOCKADE_SKOPEO) that copies an OCI layout as it is, lies included,
so the tests reach hostd/oci's own checks: `... copy [flags] oci:SRC[:TAG] oci:DEST:TAG2`.
FAKE_SKOPEO_SLEEP_S=N sleeps first (the import's time bound must kill it)."""
import json
import os
import shutil
import sys
import time

time.sleep(float(os.environ.get("FAKE_SKOPEO_SLEEP_S", "0")))
src, dest = sys.argv[-2], sys.argv[-1]
assert src.startswith("oci:") and dest.startswith("oci:"), sys.argv
src_dir, _, src_tag = src[4:].partition(":")
dest_dir, _, dest_tag = dest[4:].rpartition(":")
shutil.copytree(src_dir, dest_dir, symlinks=True)
with open(os.path.join(dest_dir, "index.json")) as f:
    index = json.load(f)
for m in index.get("manifests", []):
    ann = m.get("annotations") or {}
    if ann.get("org.opencontainers.image.ref.name") == src_tag:
        ann["org.opencontainers.image.ref.name"] = dest_tag
with open(os.path.join(dest_dir, "index.json"), "w") as f:
    json.dump(index, f)
