#!/usr/bin/python3
"""integration_image_import_guest: an imported image boots as a pool's image and its config
becomes the defaults of the session's execs (issue 29; images/README.md, "Imported images").

The image: the minimal image's root as one layer, plus a layer with a user `app` (4321:4322)
and /srv/app; its config sets Env (GREETING, PATH), WorkingDir /srv/app and User app. It is
imported into <build>/test-images (the same bytes every run, so the daemon's snapshot of it is
reused), a daemon with one pool of it starts (one guest), and a task checks that an exec with
no cwd starts in /srv/app as 4321:4322 with the image's variables, that the session's own
variables still win, and that the workspace is the image user's. `image rm` is refused while
the pool uses the image. GET /v1/pool names the pool's image and content_hash.
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from stockade_fixture import Daemon, skip  # noqa: E402
import oci_layouts as L  # noqa: E402

BUILD = os.environ.get("STOCKADE_BUILD_DIR", "")
IMAGES = os.environ.get("STOCKADE_IMAGE_DIR") or os.path.join(BUILD, "images")
CLI = os.path.join(BUILD, "tools", "stockade")
NAME = "oci-test"
PASSWD = b"root:x:0:0::/root:/bin/sh\napp:x:4321:4322::/srv/app:/bin/sh\n"
GROUP = b"root:x:0:\napp:x:4322:\n"
PROBE = ('echo "greeting=$GREETING"; echo "path=$PATH"; echo "pwd=$(pwd)"; '
         'echo "ids=$(id -u):$(id -g)"; echo "mine=$MINE"; touch /workspace/made; '
         'echo "owner=$(stat -c %u:%g /workspace/made)"')


def root_layer(work):
    """The minimal image's root as one uncompressed tar (its symlinks kept)."""
    tree = os.path.join(work, "tree")
    os.makedirs(tree)
    subprocess.run(["debugfs", "-R", f"rdump / {tree}",
                    os.path.join(IMAGES, "minimal", "root.ext4")], check=True,
                   capture_output=True)
    shutil.rmtree(os.path.join(tree, "lost+found"), ignore_errors=True)
    path = os.path.join(work, "root.tar")

    def fixed(info):
        info.mtime, info.uid, info.gid, info.uname, info.gname = L.EPOCH, 0, 0, "", ""
        return info
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name in sorted(os.listdir(tree)):
            tf.add(os.path.join(tree, name), arcname=name, filter=fixed)
    with open(path, "rb") as f:
        return f.read()


def import_image(work, dest):
    layout = os.path.join(work, "layout")
    second = L.tar_layer([L.file("etc/passwd", PASSWD), L.file("etc/group", GROUP),
                          L.dir("srv/app", uid=4321, gid=4322)])
    cfg = L.config(env=["GREETING=hello from the image", "PATH=/srv/app/bin:/usr/bin:/bin"],
                   workdir="/srv/app", user="app")
    L.write_layout(layout, [root_layer(work), second], cfg)
    os.makedirs(dest, exist_ok=True)
    for name in ("vmlinux", "initramfs.cpio", "root.ext4", "manifest.json"):
        os.makedirs(os.path.join(dest, "minimal"), exist_ok=True)
        shutil.copyfile(os.path.join(IMAGES, "minimal", name), os.path.join(dest, "minimal", name))
    p = subprocess.run([CLI, "image", "import", f"oci:{layout}:v1", "--name", NAME, "--force",
                        "--image-dir", dest], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr


def main():
    if not BUILD:
        skip("STOCKADE_BUILD_DIR is not set (ctest sets it)")
    if os.geteuid() != 0:
        skip("needs root")
    if not shutil.which("skopeo"):
        skip("skopeo is not installed (.ci/packages)")
    if not os.path.exists(os.path.join(IMAGES, "minimal", "manifest.json")):
        skip(f"the minimal image is not built in {IMAGES}")
    dest = os.path.join(BUILD, "test-images")
    work = tempfile.mkdtemp(prefix="stockade-import-guest.")
    try:
        import_image(work, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(dest, NAME, "manifest.json")) as f:
        content_hash = json.load(f)["content_hash"]
    os.environ["STOCKADE_IMAGE_DIR"] = dest
    with Daemon(pools={"imported": dict(image=NAME, warm=1, slots=1)}) as d:
        d.wait(d.pool_full, 600, "a warm guest of the imported image")
        pool = d.get("/v1/pool")["pools"][0]
        assert pool["image"] == NAME and pool["content_hash"] == content_hash, pool
        body = {"pool": "imported", "argv": ["sh", "-c", PROBE], "timeout_s": 120,
                "env": {"MINE": "the session's"}}
        sid = d.call("POST", "/v1/tasks", body=body, expect=(201,))["id"]
        events = list(d.events(sid, follow=True))
        out = "".join(e["data"] for e in events if e["type"] == "exec.stdout")
        err = "".join(e["data"] for e in events if e["type"] == "exec.stderr")
        want = ["greeting=hello from the image", "path=/srv/app/bin:/usr/bin:/bin",
                "pwd=/srv/app", "ids=4321:4322", "mine=the session's", "owner=4321:4322"]
        for line in want:
            assert line in out.splitlines(), f"{line!r} not in {out!r} (stderr {err!r})"
        rm = subprocess.run([CLI, "--socket", d.socket_path, "image", "rm", NAME,
                             "--image-dir", dest], capture_output=True, text=True)
        assert rm.returncode == 1 and "pool imported uses image" in rm.stderr, rm
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
