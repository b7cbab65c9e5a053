"""root.ext4: a journal-less ext4 image made with mkfs.ext4 -d, byte-for-byte reproducible.

mkfs.ext4 -d walks the tree in sorted order, and E2FSPROGS_FAKE_TIME fixes the times it
invents, but it copies each file's atime/ctime from the build machine (ctime cannot be set
by a program). So after mkfs, debugfs sets atime, ctime and mtime of every used inode to the
build epoch. The UUID and directory hash seed are derived from the tree's content.
"""

import hashlib
import math
import os
import re
import stat
import subprocess
import uuid

from .util import BuildError, run, tool

_BLOCK = 4096
_INODE_SIZE = 256


def walk(root):
    """Yield (relative path, lstat) for root's entries, sorted, parents first."""
    def rec(rel):
        full = os.path.join(root, rel) if rel else root
        for name in sorted(os.listdir(full)):
            r = f"{rel}/{name}" if rel else name
            st = os.lstat(os.path.join(root, r))
            yield r, st
            if stat.S_ISDIR(st.st_mode):
                yield from rec(r)
    yield from rec("")


def tree_digest(root, flatten_owner):
    """sha256 over every path, type, mode, owner (0:0 if flattened) and content."""
    h = hashlib.sha256()
    for rel, st in walk(root):
        owner = "0:0" if flatten_owner else f"{st.st_uid}:{st.st_gid}"
        h.update(f"{rel}\0{st.st_mode:o}\0{owner}\0".encode())
        full = os.path.join(root, rel)
        if stat.S_ISLNK(st.st_mode):
            h.update(os.readlink(full).encode())
        elif stat.S_ISREG(st.st_mode):
            with open(full, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        h.update(b"\n")
    return h.hexdigest()


def estimate(root, margin_pct, margin_mib):
    """(size in KiB, inode count) for the tree plus the given margins."""
    blocks, inodes, seen = 0, 1, set()
    dir_bytes = {"": 24}
    for rel, st in walk(root):
        parent = os.path.dirname(rel)
        entry = 8 + (len(os.path.basename(rel)) + 3) // 4 * 4
        dir_bytes[parent] = dir_bytes.get(parent, 24) + entry
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
        inodes += 1
        if stat.S_ISREG(st.st_mode):
            blocks += math.ceil(st.st_size / _BLOCK)
        elif stat.S_ISLNK(st.st_mode) and st.st_size >= 60:
            blocks += 1
        elif stat.S_ISDIR(st.st_mode):
            dir_bytes.setdefault(rel, 24)
    blocks += sum(math.ceil(b / _BLOCK) + 1 for b in dir_bytes.values())
    inodes = inodes + inodes // 10 + 64
    data = (blocks * _BLOCK + inodes * _INODE_SIZE) * (100 + margin_pct) // 100
    size_kib = math.ceil((data + margin_mib * 1024 * 1024) / (1024 * 1024)) * 1024
    return size_kib, inodes


def _derived_uuid(digest, purpose):
    return str(uuid.UUID(bytes=hashlib.sha256(f"{purpose}:{digest}".encode()).digest()[:16],
                         version=4))


def _used_inodes(image):
    """Inode numbers in use (root, and from the first non-reserved one on), read from
    dumpe2fs's free-inode ranges of each group."""
    out = run([tool("dumpe2fs"), image])
    ipg = int(re.search(r"^Inodes per group:\s+(\d+)", out, re.M).group(1))
    first = int(re.search(r"^First inode:\s+(\d+)", out, re.M).group(1))
    used, group = [], None
    for line in out.splitlines():
        m = re.match(r"Group (\d+):", line)
        if m:
            group = int(m.group(1))
            continue
        m = re.match(r"\s+Free inodes:(.*)$", line)
        if not m or group is None:
            continue
        free = set()
        for part in filter(None, (p.strip() for p in m.group(1).split(","))):
            a, _, b = part.partition("-")
            free.update(range(int(a), int(b or a) + 1))
        lo, hi = group * ipg + 1, (group + 1) * ipg
        used += [i for i in range(lo, hi + 1) if i not in free and (i == 2 or i >= first)]
        group = None
    if not used:
        raise BuildError("could not read the inode bitmap summary from dumpe2fs")
    return used


def _fix_inodes(image, epoch, env, flatten_owner, keep_mtime):
    cmds = []
    fields = ("atime", "ctime") if keep_mtime else ("atime", "ctime", "mtime")
    for ino in _used_inodes(image):
        for field in fields:
            cmds.append(f"sif <{ino}> {field} @{epoch}")
        if flatten_owner:
            cmds += [f"sif <{ino}> uid 0", f"sif <{ino}> gid 0"]
    script = image + ".debugfs"
    with open(script, "w") as f:
        f.write("\n".join(cmds) + "\n")

    proc = subprocess.run([tool("debugfs"), "-w", "-f", script, image], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.remove(script)
    errors = [ln for ln in proc.stderr.decode(errors="replace").splitlines()
              if ln.strip() and not ln.startswith("debugfs ")]
    if proc.returncode != 0 or errors:
        raise BuildError(f"debugfs fix-up failed: {errors[:5]}")


def make(root, image, *, label, epoch, margin_pct, margin_mib, keep_mtime=False):
    """Build image from root. Returns (size in bytes, tree digest). keep_mtime: the tree's
    mtimes stay (an imported image's, which its layers fixed); else every time is epoch."""
    # Not root: dpkg-deb -x made the files ours; the image gets them as root's (debugfs).
    flatten_owner = os.geteuid() != 0
    digest = tree_digest(root, flatten_owner)
    size_kib, inodes = estimate(root, margin_pct, margin_mib)
    env = dict(os.environ, E2FSPROGS_FAKE_TIME=str(epoch), SOURCE_DATE_EPOCH=str(epoch))
    fs_uuid, seed = _derived_uuid(digest, "uuid"), _derived_uuid(digest, "hash_seed")
    for attempt in range(4):
        if os.path.exists(image):
            os.remove(image)
        argv = [tool("mkfs.ext4"), "-q", "-F", "-t", "ext4", "-b", str(_BLOCK),
                "-I", str(_INODE_SIZE), "-N", str(inodes), "-m", "0", "-L", label[:16],
                "-U", fs_uuid, "-O", "^has_journal",
                "-E", f"hash_seed={seed},root_owner=0:0,nodiscard",
                "-d", root, image, f"{size_kib}k"]

        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode == 0:
            break
        text = proc.stdout.decode(errors="replace")
        if attempt == 3 or not re.search(r"space|allocate", text, re.I):
            raise BuildError(f"mkfs.ext4 failed: {text[-2000:]}")
        size_kib = size_kib * 5 // 4 // 1024 * 1024   # deterministic growth, whole MiB
    _fix_inodes(image, epoch, env, flatten_owner, keep_mtime)
    run([tool("e2fsck"), "-fn", image])
    return os.path.getsize(image), digest
