#!/usr/bin/env python3
"""The workspace tar writer (hostd/api/tarwriter.c) read back by three readers: ours
(hostd/extract/tar.c), GNU tar (`tar tvf`) and Python's tarfile. Issue 14: a GNU 'L' record
that announced a name of N blocks but carried one let a guest's file content be read as
headers; each long-named file here holds forged headers (a symlink to /etc/passwd, an
absolute setuid file), and every reader must list exactly the tree, nothing forged.

    api_tarwriter_readers.py TOOL    (TOOL: build/tests/unit/api_tarwriter_tool)
"""
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

NAME_MAX_BYTES = 4096  # TARW_NAME_MAX_BYTES


def forged_headers():
    evil = tarfile.TarInfo("evil")
    evil.type, evil.linkname = tarfile.SYMTYPE, "/etc/passwd"
    suid = tarfile.TarInfo("/usr/local/bin/rootme")
    suid.mode, suid.size = 0o4755, 0
    return (evil.tobuf(tarfile.USTAR_FORMAT) + suid.tobuf(tarfile.USTAR_FORMAT)
            + b"\0" * 1024)


def long_path(length, fill):
    """A relative path of exactly `length` bytes: 200-byte components, a shorter last."""
    comps, left = [], length
    while left > 0:
        n = min(200, left) if left != 201 else 199  # never an empty last component
        comps.append(fill * n)
        left -= n + (1 if left - n > 0 else 0)
    p = "/".join(comps)
    assert len(p) == length, (len(p), length)
    return p


def make(root_fd, rel, data=None):
    """mkdir -p (and a file when data is given) through directory fds: rel may exceed
    PATH_MAX."""
    comps = rel.split("/")
    fd = os.dup(root_fd)
    for c in comps if data is None else comps[:-1]:
        try:
            os.mkdir(c, 0o755, dir_fd=fd)
        except FileExistsError:
            pass
        nfd = os.open(c, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        os.close(fd)
        fd = nfd
    if data is not None:
        f = os.open(comps[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
        os.write(f, data)
        os.close(f)
    os.close(fd)


def build_tree(root):
    forged = forged_headers()
    files = {
        "short.txt": b"hello\n",
        "/".join(["w" * 200] * 3): forged,                        # the finding: 602 bytes
        long_path(600, "s"): forged + b"six hundred",
        long_path(NAME_MAX_BYTES, "m"): forged + b"at the limit",  # kept
        long_path(NAME_MAX_BYTES + 1, "o"): forged,               # over: left out
    }
    dirs = ["empty", long_path(NAME_MAX_BYTES, "d")]                # "<4096>/": left out
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for rel, data in files.items():
        make(root_fd, rel, data)
    for rel in dirs:
        make(root_fd, rel)
    os.close(root_fd)
    want = {}  # name as in the archive -> (type, content)
    for rel, data in files.items():
        parts = rel.split("/")
        for i in range(1, len(parts)):
            want["/".join(parts[:i]) + "/"] = ("5", b"")
        want[rel] = ("0", data)
    for rel in dirs:
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            want["/".join(parts[:i]) + "/"] = ("5", b"")
    return {n: v for n, v in want.items() if len(n) <= NAME_MAX_BYTES}


def check(reader, got, want):
    got_names, want_names = set(got), set(want)
    if got_names != want_names:
        extra = sorted(n[:80] for n in got_names - want_names)
        missing = sorted(n[:80] for n in want_names - got_names)
        raise SystemExit(f"FAIL {reader}: extra entries {extra}, missing {missing}")
    for n, (typ, size, digest) in got.items():
        wt, wdata = want[n]
        if typ != wt or size != len(wdata) or (digest is not None and
                                              digest != hashlib.sha256(wdata).hexdigest()):
            raise SystemExit(f"FAIL {reader}: {n[:80]}: type {typ} size {size}, want "
                             f"type {wt} size {len(wdata)}")
    print(f"{reader}: {len(got)} entries, as expected")


def read_tarfile(data):
    got = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        for m in t:  # one at a time: a forged entry is reported before a later error
            if not (m.isreg() or m.isdir()) or m.mode & 0o7000 or m.name.startswith("/"):
                raise SystemExit(f"FAIL tarfile: forged entry {m.name!r} type {m.type!r} "
                                 f"mode {m.mode:o} link {m.linkname!r}")
            name = m.name + "/" if m.isdir() else m.name
            content = t.extractfile(m).read() if m.isreg() else b""
            got[name] = ("5" if m.isdir() else "0", m.size,
                         hashlib.sha256(content).hexdigest())
    return got


def read_gnu_tar(path):
    run = subprocess.run(["tar", "tvf", path], capture_output=True)
    got = {}
    for line in run.stdout.decode().splitlines():
        perms, _owner, size, _date, _time, name = line.split(maxsplit=5)
        if perms[0] not in "d-" or "s" in perms or " -> " in name or name.startswith("/"):
            raise SystemExit(f"FAIL tar: forged entry: {line[:200]}")
        got[name] = ("5" if perms[0] == "d" else "0", int(size), None)
    if run.returncode != 0:
        raise SystemExit(f"FAIL tar: exit {run.returncode}: {run.stderr.decode()[:300]}")
    return got


def read_ours(tool, data):
    out = subprocess.run([tool, "list"], input=data, check=True, capture_output=True).stdout
    lines = out.decode().splitlines()
    if lines[-1:] != ["end"]:
        raise SystemExit(f"FAIL ours: the archive does not end cleanly: {lines[-1:]}")
    got = {}
    for line in lines[:-1]:
        typ, size, digest, name = line.split(" ")
        if name == "bad":
            raise SystemExit(f"FAIL ours: a name over TAR_PATH_MAX_BYTES or with a NUL")
        got[bytes.fromhex(name).decode()] = (typ, int(size), digest)
    return got


def main():
    tool = sys.argv[1]
    root = tempfile.mkdtemp(prefix="stockade-tarw-")
    try:
        os.mkdir(os.path.join(root, "tree"))
        want = build_tree(os.path.join(root, "tree"))
        data = subprocess.run([tool, "write", os.path.join(root, "tree")], check=True,
                              capture_output=True).stdout
        archive = os.path.join(root, "out.tar")
        with open(archive, "wb") as f:
            f.write(data)
        assert len(data) % 512 == 0, len(data)
        failed = 0
        for reader, read in (("ours (hostd/extract/tar.c)", lambda: read_ours(tool, data)),
                             ("GNU tar", lambda: read_gnu_tar(archive)),
                             ("Python tarfile", lambda: read_tarfile(data))):
            try:  # every reader runs, so a failure shows what each of them saw
                check(reader, read(), want)
            except (SystemExit, subprocess.CalledProcessError, tarfile.TarError) as e:
                print(e if isinstance(e, SystemExit) else f"FAIL {reader}: {e}")
                failed += 1
        if failed:
            sys.exit(1)
        print(f"ok: {len(data)} bytes, {len(want)} entries")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
