#!/usr/bin/python3
"""integration_image_import: `stockade image import` and `image build --file` end to end, no
guest (issue 29).

Honest images: an OCI layout made with umoci from the minimal image's root (two layers: the
second adds, changes and deletes files, so umoci writes whiteouts) imported through the real
skopeo, and a `docker save` tarball assembled here from the same layers (real skopeo too):
same tree, so the same content_hash; a second import of the same layout gives the same bytes.
Hostile images, each its own case, through a stand-in skopeo that copies the layout as it is
(tests/integration/fake_skopeo.py), so hostd/oci's own checks are what refuses: device nodes,
setuid files, absolute and climbing symlinks used as parents, hard links across layers and out
of the tree, `..` and absolute names, a decompression bomb, a manifest that lies about a size,
a blob, a diff_id, the config or itself, too many entries, a skopeo that overstays, whiteouts
and opaque directories, owners, a planted runner defaults file. Each result is read back from
root.ext4 with debugfs (Debian's tool, not ours). Every case also checks that nothing landed
outside the image directory and that the scratch folder is gone. Dockerfile builds: FROM,
ARG, ENV, WORKDIR, COPY (--chown, a symlink in the context copied as one), USER, CMD read back
the same way, the same Dockerfile and context give the same content_hash; RUN (before any
step runs), a COPY source outside the context (by `..` or through a symlink), an unsupported
instruction and a FROM that is no local image are refused.
"""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from stockade_fixture import skip  # noqa: E402
import oci_layouts as L  # noqa: E402

BUILD = os.environ.get("STOCKADE_BUILD_DIR", "")
IMAGES = os.environ.get("STOCKADE_IMAGE_DIR") or os.path.join(BUILD, "images")
CLI = os.path.join(BUILD, "tools", "stockade")
FAKE = os.path.join(HERE, "fake_skopeo.py")


def need():
    if not BUILD:
        skip("STOCKADE_BUILD_DIR is not set (ctest sets it)")
    if os.geteuid() != 0:
        skip("image import needs root (it sets the owners of the image's files)")
    for tool in ("skopeo", "umoci", "debugfs"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            skip(f"{tool} is not installed (.ci/packages)")
    if not os.path.exists(os.path.join(IMAGES, "minimal", "manifest.json")):
        skip(f"the minimal image is not built in {IMAGES}")


class Work:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="stockade-import.")
        self.imgs = os.path.join(self.dir, "imgs")
        os.makedirs(os.path.join(self.imgs, "minimal"))
        for name in ("vmlinux", "initramfs.cpio", "root.ext4", "manifest.json"):
            src = os.path.join(IMAGES, "minimal", name)
            dst = os.path.join(self.imgs, "minimal", name)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        self.n = 0

    def path(self, name):
        return os.path.join(self.dir, name)

    def layout(self, layers, cfg=None, **kw):
        self.n += 1
        root = self.path(f"layout{self.n}")
        L.write_layout(root, [L.tar_layer(t) if isinstance(t, list) else t for t in layers],
                       cfg, **kw)
        return f"oci:{root}:v1"

    def run(self, source, name, *flags, fake=True, env=None, umask=None):
        e = dict(os.environ, **(env or {}))
        if fake:
            e["STOCKADE_SKOPEO"] = FAKE
        else:
            e.pop("STOCKADE_SKOPEO", None)
        p = subprocess.run([CLI, "image", "import", source, "--name", name, "--image-dir",
                            self.imgs, *flags], env=e, capture_output=True, text=True,
                           timeout=600, preexec_fn=(lambda: os.umask(umask)) if umask else None)
        left = os.listdir(os.path.join(self.imgs, ".import"))
        assert not left, f"scratch left behind: {left}"
        return p

    def ok(self, source, name, *flags, **kw):
        p = self.run(source, name, *flags, **kw)
        assert p.returncode == 0, f"import failed ({p.returncode}): {p.stdout}{p.stderr}"
        return Image(os.path.join(self.imgs, name)), p

    def refused(self, source, name, pattern, *flags, **kw):
        p = self.run(source, name, *flags, **kw)
        out = p.stdout + p.stderr
        assert p.returncode != 0, f"import of a hostile image succeeded: {out}"
        assert re.search(pattern, out), f"message does not say {pattern!r}: {out}"
        assert not os.path.exists(os.path.join(self.imgs, name)), "a refused image was installed"
        return out


class Image:
    def __init__(self, folder):
        self.folder = folder
        self.root = os.path.join(folder, "root.ext4")
        with open(os.path.join(folder, "manifest.json")) as f:
            self.manifest = json.load(f)

    def debugfs(self, cmd):
        p = subprocess.run(["debugfs", "-R", cmd, self.root], capture_output=True, text=True)
        return p.stdout

    def stat(self, path):
        out = self.debugfs(f"stat {path}")
        m = re.search(r"Type: (\S+)\s+Mode:\s+(\d+)", out)
        if not m:
            return None
        u = re.search(r"User:\s+(\d+)\s+Group:\s+(\d+)", out)
        return dict(type=m.group(1), mode=int(m.group(2), 8), uid=int(u.group(1)),
                    gid=int(u.group(2)), text=out)

    def cat(self, path):
        return self.debugfs(f"cat {path}")

    def names(self, path):
        out = self.debugfs(f"ls -p {path}")
        return {ln.split("/")[5] for ln in out.splitlines() if ln.count("/") >= 6} - {".", ".."}

    def all_types(self):
        """Every inode type in the filesystem, walked with debugfs rdump-free listing."""
        out = self.debugfs("ls -lR /") if False else ""
        return out


# ---------------------------------------------------------------- honest images

def case_umoci_and_docker_archive(w):
    tree = w.path("tree")
    os.makedirs(tree)
    subprocess.run(["debugfs", "-R", f"rdump / {tree}", os.path.join(IMAGES, "minimal",
                                                                       "root.ext4")],
                   check=True, capture_output=True)
    shutil.rmtree(os.path.join(tree, "lost+found"), ignore_errors=True)
    lay = w.path("umoci")
    run = lambda *a: subprocess.run(["umoci", *a], check=True, capture_output=True)  # noqa
    run("init", "--layout", lay)
    run("new", "--image", f"{lay}:base")
    bundle = w.path("bundle")
    run("unpack", "--image", f"{lay}:base", bundle)
    subprocess.run(["cp", "-a", f"{tree}/.", f"{bundle}/rootfs/"], check=True)
    run("repack", "--image", f"{lay}:base", bundle)
    # second layer (a new unpack of the first): a new file owned by 1234:5678, a changed
    # file, a deleted one (umoci writes a whiteout)
    bundle = w.path("bundle2")
    run("unpack", "--image", f"{lay}:base", bundle)
    rootfs = os.path.join(bundle, "rootfs")
    with open(os.path.join(rootfs, "etc", "added"), "w") as f:
        f.write("second layer\n")
    os.chown(os.path.join(rootfs, "etc", "added"), 1234, 5678)
    with open(os.path.join(rootfs, "etc", "hostname"), "w") as f:
        f.write("changed\n")
    os.remove(os.path.join(rootfs, "etc", "hosts"))
    run("repack", "--image", f"{lay}:base", bundle)
    run("config", "--image", f"{lay}:base", "--tag", "v1", "--config.env", "GREETING=hi there",
        "--config.env", "PATH=/usr/local/bin:/usr/bin:/bin", "--config.workingdir", "/srv/app",
        "--config.cmd", "sh")
    img, p = w.ok(f"oci:{lay}:v1", "from-umoci", fake=False)
    assert "layer 2/2" in p.stdout and "verified" in p.stdout and "1 whiteouts" in p.stdout, \
        p.stdout
    st = img.stat("/etc/added")
    assert st and (st["uid"], st["gid"]) == (1234, 5678), st
    assert img.cat("/etc/hostname") == "changed\n"
    assert img.stat("/etc/hosts") is None, "a whiteout did not remove /etc/hosts"
    conf = img.cat("/etc/stockade/image.conf")
    for line in ("env GREETING=hi there", "env PATH=/usr/local/bin:/usr/bin:/bin",
                 "cwd /srv/app", "cmd sh"):
        assert line in conf.splitlines(), f"{line!r} not in {conf!r}"
    assert img.stat("/srv/app")["type"] == "directory"
    assert img.stat("/workspace")["type"] == "directory"
    assert "user:x:1000:1000" in img.cat("/etc/passwd")
    assert img.manifest["origin"]["kind"] == "import"
    assert img.manifest["config"]["working_dir"] == "/srv/app"
    ls = subprocess.run([CLI, "image", "ls", "--verify", "--image-dir", w.imgs, "--json"],
                        capture_output=True, text=True)
    got = {i["name"]: i for i in json.loads(ls.stdout)["images"]}
    assert got["from-umoci"]["ok"] and got["from-umoci"]["origin"].startswith("import oci:"), got

    again, _ = w.ok(f"oci:{lay}:v1", "from-umoci-again", fake=False)
    assert again.manifest["content_hash"] == img.manifest["content_hash"], "not reproducible"

    layers, cfg = L.read_layout_layers(lay, "v1")
    archive = w.path("saved.tar")
    L.docker_archive(archive, layers, cfg)
    dock, _ = w.ok(f"docker-archive:{archive}", "from-docker", fake=False)
    assert dock.manifest["content_hash"] == img.manifest["content_hash"], \
        "the docker-archive of the same layers and config gave another image"


# ---------------------------------------------------------------- hostile images

def case_devices(w):
    src = w.layout([[L.file("ok", b"x"), L.device("dev/evil-char", "char"),
                     L.device("dev/evil-block", "block"), L.device("fifo", "fifo")]])
    img, p = w.ok(src, "devices")
    assert "skipped 3 device node(s)/FIFO(s)" in p.stdout, p.stdout
    for path in ("/dev/evil-char", "/dev/evil-block", "/fifo"):
        assert img.stat(path) is None, f"{path} exists"
    assert img.manifest["unpack"]["skipped_special"] == 3


def case_setuid(w):
    src = w.layout([[L.file("usr/bin/su", b"#!/bin/sh\n", mode=0o4755),
                     L.file("usr/bin/wall", b"x", mode=0o2755), L.dir("tmp", mode=0o1777)]])
    img, p = w.ok(src, "setuid")
    assert img.stat("/usr/bin/su")["mode"] == 0o755
    assert img.stat("/usr/bin/wall")["mode"] == 0o755
    assert img.stat("/tmp")["mode"] == 0o1777, "the sticky bit is no privilege: it stays"
    assert "removed setuid/setgid from 2 entries" in p.stdout, p.stdout


def case_symlink_parents(w):
    marker = f"stockade-i29-{secrets.token_hex(4)}"
    src = w.layout([[L.symlink("abs", "/"), L.symlink("up", "../../../../../../../../.."),
                     L.dir("etc"), L.dir("tmp")],
                    [L.file(f"abs/tmp/{marker}", b"in the image"),
                     L.file(f"up/{marker}-2", b"in the image too"),
                     L.symlink("etcdir", "/etc"), L.file("etcdir/from-link", b"y")]])
    img, _ = w.ok(src, "symlinks")
    for host in (f"/tmp/{marker}", f"/{marker}-2", "/etc/from-link"):
        assert not os.path.exists(host), f"{host} was written on the host"
    assert img.cat(f"/tmp/{marker}") == "in the image"
    assert img.cat(f"/{marker}-2") == "in the image too"
    assert img.cat("/etc/from-link") == "y"
    assert img.stat("/abs")["type"] == "symlink", "an absolute symlink is kept as it is"
    w.refused(w.layout([[L.symlink("nowhere", "/no/such/dir")], [L.file("nowhere/f", b"x")]]),
              "dangling", r"layer 2/2 .*entry nowhere/f: a parent is a symlink to nothing")


def case_hardlinks(w):
    img, _ = w.ok(w.layout([[L.file("a", b"shared")], [L.hardlink("b", "a")]]), "links")
    sa, sb = img.stat("/a"), img.stat("/b")
    ino = lambda s: re.search(r"Inode: (\d+)", s["text"]).group(1)  # noqa: E731
    assert ino(sa) == ino(sb), "a hard link across layers is one inode"
    w.refused(w.layout([[L.file("a", b"x")], [L.hardlink("b", "../../etc/passwd")]]),
              "link-out", r"layer 2/2.*entry b: hard link target .* climbs with \.\.")
    w.refused(w.layout([[L.symlink("s", "/etc/hostname")], [L.hardlink("h", "s")]]),
              "link-sym", r"layer 2/2.*entry h: hard link target s is not a regular file")
    w.refused(w.layout([[L.symlink("d", "/etc")], [L.hardlink("h", "d/shadow")]]),
              "link-via", r"entry h: hard link target d/shadow is not a regular file")
    w.refused(w.layout([[L.hardlink("h", "/etc/passwd")]]), "link-abs",
              r"entry h: hard link target /etc/passwd is absolute")


def case_umask(w):
    """An operator's umask 077 changes no mode: implied directories 0755, the image's files
    0644 in a 0755 folder (QEMU, another user, must read them)."""
    img, _ = w.ok(w.layout([[L.file("deep/er/f", b"x")]]), "umask", umask=0o077)
    assert img.stat("/deep")["mode"] == 0o755 and img.stat("/deep/er")["mode"] == 0o755
    assert os.stat(img.folder).st_mode & 0o777 == 0o755
    for name in ("root.ext4", "vmlinux", "initramfs.cpio", "manifest.json"):
        assert os.stat(os.path.join(img.folder, name)).st_mode & 0o777 == 0o644, name


def case_names(w):
    w.refused(w.layout([[L.file("ok", b"x"), L.file("a/../../escape", b"x")]]), "dotdot",
              r"layer 1/1 \(sha256:[0-9a-f]{12}\): entry a/\.\./\.\./escape: a \.\. component")
    w.refused(w.layout([[L.file("/etc/abs", b"x")]]), "absolute",
              r"entry /etc/abs: absolute name")


def case_bomb(w):
    zeros = L.tar_layer([L.file("zeros", b"\0" * (64 << 20))])
    w.refused(w.layout([zeros]), "bomb", r"layer 1/1 .*expands past the import's byte budget",
              "--max-bytes", "8M")


def case_lies(w):
    layer = [L.file("f", b"hello")]
    w.refused(w.layout([layer], lie=dict(layer=0, layer_size_delta=-7)), "lie-short",
              r"the blob has \d+ bytes, the manifest says \d+")
    w.refused(w.layout([layer], lie=dict(layer=0, layer_size_delta=9)), "lie-long",
              r"the blob has \d+ bytes, the manifest says \d+")
    w.refused(w.layout([layer], lie=dict(layer_flip=0)), "lie-digest",
              r"its digest|corrupt gzip|sha256")
    w.refused(w.layout([layer], gz=False, lie=dict(layer_flip=0)), "lie-digest-plain",
              r"the blob's sha256 is not its digest")
    w.refused(w.layout([layer], lie=dict(diff_id_flip=0)), "lie-diffid",
              r"uncompressed layer's sha256 is not the config's diff_id")
    w.refused(w.layout([layer], lie=dict(config_flip=True)), "lie-config",
              r"image config sha256:[0-9a-f]+: its sha256 is not its digest")
    w.refused(w.layout([layer], lie=dict(manifest_flip=True)), "lie-manifest",
              r"image manifest sha256:[0-9a-f]+: its sha256 is not its digest")
    # the real skopeo refuses a lying layout too (defence in depth: both check)
    w.refused(w.layout([layer], gz=False, lie=dict(layer_flip=0)), "lie-skopeo", r".",
              fake=False)


def case_entries(w):
    w.refused(w.layout([[L.file(f"f{i}", b"") for i in range(50)]]), "many",
              r"more than 20 entries", "--max-entries", "20")


def case_time(w):
    w.refused(w.layout([[L.file("f", b"x")]]), "slow", r"ran out of the import's time",
              "--timeout", "2", env={"FAKE_SKOPEO_SLEEP_S": "120"})


def case_whiteouts(w):
    src = w.layout([[L.dir("d"), L.file("d/a", b"a"), L.file("d/b", b"b"), L.file("f", b"f"),
                     L.dir("d/sub"), L.file("d/sub/old", b"o")],
                    [L.file("d/sub/new", b"n"), L.file("d/.wh..wh..opq", b""),
                     L.file(".wh.f", b""), L.file("g", b"g"), L.file(".wh.g", b"")]])
    img, _ = w.ok(src, "whiteouts")
    assert img.names("/d") == {"sub"}, img.names("/d")
    assert img.names("/d/sub") == {"new"}, "an opaque directory keeps only its own layer's"
    assert img.stat("/f") is None
    assert img.cat("/g") == "g", "a whiteout hides lower layers only, not its own layer's file"


def case_owner_user(w):
    passwd = b"root:x:0:0::/root:/bin/sh\napp:x:4321:4322::/home/app:/bin/sh\n"
    group = b"root:x:0:\napp:x:4322:\n"
    planted = b"user 1:1\nenv EVIL=1\n"
    src = w.layout([[L.file("etc/passwd", passwd), L.file("etc/group", group),
                     L.file("srv/data", b"d", uid=4321, gid=4322),
                     L.file("etc/stockade/image.conf", planted)]],
                   L.config(user="app"))
    img, _ = w.ok(src, "owner")
    st = img.stat("/srv/data")
    assert (st["uid"], st["gid"]) == (4321, 4322), st
    conf = img.cat("/etc/stockade/image.conf")
    assert "user 4321:4322" in conf and "EVIL" not in conf and "user 1:1" not in conf, conf
    assert "user:x:1000:1000" in img.cat("/etc/passwd"), "uid 1000 added for sessions"
    root, _ = w.ok(w.layout([[L.file("x", b"")]], L.config(user="0:0")), "root-user")
    assert "user " not in root.cat("/etc/stockade/image.conf")
    w.refused(w.layout([[L.file("x", b"")]], L.config(user="nobody-here")), "bad-user",
              r"User nobody-here: no such user")


def build(w, name, dockerfile, files, *flags):
    ctx = w.path(f"ctx-{name}")
    os.makedirs(ctx)
    for rel, data in files.items():
        full = os.path.join(ctx, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if isinstance(data, tuple):  # ("symlink", target)
            os.symlink(data[1], full)
        else:
            with open(full, "wb") as f:
                f.write(data)
    df = os.path.join(ctx, "Dockerfile")
    with open(df, "w") as f:
        f.write(dockerfile)
    p = subprocess.run([CLI, "image", "build", "--file", df, ctx, "--name", name, "--image-dir",
                        w.imgs, *flags], capture_output=True, text=True, timeout=600)
    assert not os.listdir(os.path.join(w.imgs, ".import")), "scratch left behind"
    return p


DOCKERFILE = """\
# syntax=docker/dockerfile:1
ARG BASE=minimal
FROM ${BASE}
ARG GREETING="hello there"
ENV GREETING=$GREETING \\
    APP_HOME=/srv/app
WORKDIR ${APP_HOME}
COPY app/ ./
COPY --chown=4321:4322 app/main.py /opt/
LABEL org.example.note="changes nothing"
USER 4321:4322
CMD ["sh", "-c", "echo $GREETING"]
"""


def case_dockerfile(w):
    files = {"app/main.py": b"print('hi')\n", "app/sub/data.txt": b"data\n",
             "app/link": ("symlink", "/etc/shadow")}
    p = build(w, "df-one", DOCKERFILE, files)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Step 6/10 : COPY app/ ./" in p.stdout, p.stdout
    img = Image(os.path.join(w.imgs, "df-one"))
    assert img.cat("/srv/app/main.py") == "print('hi')\n"
    assert img.cat("/srv/app/sub/data.txt") == "data\n"
    assert img.stat("/srv/app/link")["type"] == "symlink", "a context symlink is copied as one"
    st = img.stat("/opt/main.py")
    assert (st["uid"], st["gid"]) == (4321, 4322), st
    conf = img.cat("/etc/stockade/image.conf").splitlines()
    for line in ("env GREETING=hello there", "env APP_HOME=/srv/app", "cwd /srv/app",
                 "user 4321:4322", "cmd sh", "cmd -c", "cmd echo $GREETING"):
        assert line in conf, f"{line!r} not in {conf}"
    assert img.manifest["origin"]["kind"] == "dockerfile"
    again = build(w, "df-two", DOCKERFILE, files)
    assert again.returncode == 0, again.stderr
    assert Image(os.path.join(w.imgs, "df-two")).manifest["content_hash"] == \
        img.manifest["content_hash"], "the same Dockerfile and context gave another image"


def case_dockerfile_refused(w):
    p = build(w, "df-run", "FROM minimal\nCOPY a /a\nRUN apt-get install -y jq\n", {"a": b"a"})
    assert p.returncode == 1 and "line 3: RUN apt-get install -y jq" in p.stderr, p.stderr
    assert "Step 1" not in p.stdout, "a RUN is refused before any step runs"
    p = build(w, "df-out", "FROM minimal\nCOPY ../../etc/passwd /x\n", {})
    assert p.returncode == 1 and "not a path inside the build context" in p.stderr, p.stderr
    p = build(w, "df-link", "FROM minimal\nCOPY out /x\n", {"out": ("symlink", "/etc")})
    assert p.returncode == 1 and "COPY out: not in the build context" in p.stderr, p.stderr
    p = build(w, "df-shell", "FROM minimal\nSHELL [\"/bin/bash\"]\n", {})
    assert p.returncode == 1 and "line 2: SHELL is not supported" in p.stderr, p.stderr
    p = build(w, "df-from", "FROM ubuntu:22.04\n", {})
    assert p.returncode == 1 and "FROM ubuntu:22.04: name an image" in p.stderr, p.stderr
    for name in ("df-run", "df-out", "df-link", "df-shell", "df-from"):
        assert not os.path.exists(os.path.join(w.imgs, name))


CASES = [case_umoci_and_docker_archive, case_devices, case_setuid, case_symlink_parents,
         case_hardlinks, case_umask, case_names, case_bomb, case_lies, case_entries, case_time,
         case_whiteouts, case_owner_user, case_dockerfile, case_dockerfile_refused]


def main():
    need()
    only = sys.argv[1:]
    w = Work()
    failed = ran = 0
    try:
        for case in CASES:
            if only and case.__name__ not in only:
                continue
            ran += 1
            try:
                case(w)
                print(f"PASS {case.__name__}")
            except AssertionError as e:
                failed += 1
                print(f"FAIL {case.__name__}: {e}")
            sys.stdout.flush()
    finally:
        shutil.rmtree(w.dir, ignore_errors=True)
    print(f"{ran - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
