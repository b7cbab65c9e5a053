"""The initramfs: an uncompressed newc cpio written byte for byte by this module, so the
same inputs give the same archive (sorted, parents before children, fixed mtime, owner 0:0,
inode numbers in order). Uncompressed because decompressing under TCG is slow.

Layout (images/README.md): /init = the runner, /lib/modules/<name>.ko, the load order in
/etc/stockade/modules, and empty /dev /proc /sys /newroot.
"""

import stat

_DIRS = ("dev", "etc", "etc/stockade", "lib", "lib/modules", "newroot", "proc", "sys")
MODULES_LIST = "etc/stockade/modules"


def _header(ino, mode, nlink, mtime, size, namesize):
    fields = (ino, mode, 0, 0, nlink, mtime, size, 0, 0, 0, 0, namesize, 0)
    return b"070701" + b"".join(b"%08X" % v for v in fields)


def _pad4(n):
    return b"\0" * ((4 - n % 4) % 4)


def _member(ino, name, mode, nlink, mtime, data):
    bname = name.encode() + b"\0"
    hdr = _header(ino, mode, nlink, mtime, len(data), len(bname)) + bname
    return hdr + _pad4(len(hdr)) + data + _pad4(len(data))


def cpio_newc(entries, mtime):
    """entries: {path without leading '/': (mode incl. type bits, bytes or None)}."""
    out = []
    ordered = sorted(entries, key=lambda p: p.split("/"))
    for ino, path in enumerate(ordered, start=1):
        mode, data = entries[path]
        nlink = 2 if stat.S_ISDIR(mode) else 1
        out.append(_member(ino, path, mode, nlink, mtime, data or b""))
    out.append(_member(0, "TRAILER!!!", 0, 1, 0, b""))
    blob = b"".join(out)
    return blob + b"\0" * ((512 - len(blob) % 512) % 512)


def build(runner_bytes, modules, mtime):
    """modules: [(file name, bytes)] in load order. Returns the archive bytes."""
    entries = {d: (stat.S_IFDIR | 0o755, None) for d in _DIRS}
    entries["init"] = (stat.S_IFREG | 0o755, runner_bytes)
    for fname, data in modules:
        entries[f"lib/modules/{fname}"] = (stat.S_IFREG | 0o644, data)
    order = "".join(f"{fname}\n" for fname, _ in modules)
    entries[MODULES_LIST] = (stat.S_IFREG | 0o644, order.encode())
    return cpio_newc(entries, mtime)
