"""The root filesystem tree: packages unpacked, /usr merged, trimmed, busybox applet links,
the overlay (/etc/passwd ...), mount points, and Python byte-code compiled ahead (the root is
read-only at run time, so a guest could never cache it).
"""

import glob
import os
import shutil
import stat
import subprocess
import sys

from .util import BuildError, log, run, tool

_MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def _same_entry(a, b):
    if os.path.islink(a) and os.path.islink(b):
        return os.readlink(a) == os.readlink(b)
    if os.path.isfile(a) and os.path.isfile(b) and not os.path.islink(a) \
            and not os.path.islink(b):
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    return False


def _points_at(link, target_abs, root):
    """True if symlink link resolves, inside root, to the path target_abs ('/x/y')."""
    if not os.path.islink(link):
        return False
    dest = os.readlink(link)
    if not dest.startswith("/"):
        dest = os.path.normpath(os.path.join("/", os.path.relpath(os.path.dirname(link), root),
                                             dest))
    return os.path.normpath(dest) == target_abs


def _merge_into(src, dst, root):
    for name in sorted(os.listdir(src)):
        s, d = os.path.join(src, name), os.path.join(dst, name)
        s_abs = "/" + os.path.relpath(s, root)
        d_abs = "/" + os.path.relpath(d, root)
        if not os.path.lexists(d):
            os.rename(s, d)
        elif os.path.isdir(s) and not os.path.islink(s) and os.path.isdir(d) \
                and not os.path.islink(d):
            _merge_into(s, d, root)
        elif _same_entry(s, d) or _points_at(s, d_abs, root):
            os.remove(s)
        elif _points_at(d, s_abs, root):
            os.remove(d)
            os.rename(s, d)
        else:
            raise BuildError(f"usr-merge conflict: {s_abs} and {d_abs} differ")
    os.rmdir(src)


def usr_merge(root):
    """Make /bin /sbin /lib (/lib64 ...) symlinks into /usr, as on an installed Debian 12."""
    for d in _MERGED:
        top, usr = os.path.join(root, d), os.path.join(root, "usr", d)
        if os.path.isdir(top) and not os.path.islink(top):
            os.makedirs(usr, exist_ok=True)
            _merge_into(top, usr, root)
        if os.path.isdir(usr) or d in ("bin", "sbin", "lib"):
            os.makedirs(usr, exist_ok=True)
            if not os.path.lexists(top):
                os.symlink(f"usr/{d}", top)


def trim(root, patterns, keep):
    """Remove every path matching a glob in patterns unless it matches one in keep."""
    kept = set()
    for pat in keep:
        kept.update(os.path.normpath(p) for p in glob.glob(os.path.join(root, pat)))
    for pat in patterns:
        for path in sorted(glob.glob(os.path.join(root, pat))):
            path = os.path.normpath(path)
            if path in kept or any(k.startswith(path + "/") for k in kept):
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.remove(path)


def busybox_links(root):
    """A symlink for every busybox applet that no package already provides."""
    bb = os.path.join(root, "usr/bin/busybox")
    if not os.path.exists(bb):
        raise BuildError("usr/bin/busybox missing (the recipe must include busybox-static)")
    applets = run([bb, "--list-full"]).split()
    made = 0
    for rel in sorted(applets):
        parts = rel.split("/")
        if parts[0] in _MERGED:
            parts.insert(0, "usr")
        if len(parts) != 3 or parts[0] != "usr" or parts[-1] in ("linuxrc", "busybox"):
            continue
        path = os.path.join(root, *parts)
        if os.path.lexists(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(os.path.relpath(bb, os.path.dirname(path)), path)
        made += 1
    return made


def copy_overlay(src, root):
    """Copy the overlay tree in (files 0644, or 0755 if executable in git; dirs 0755)."""
    if not os.path.isdir(src):
        return
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        rel = os.path.relpath(dirpath, src)
        dst_dir = os.path.normpath(os.path.join(root, rel))
        os.makedirs(dst_dir, exist_ok=True)
        for name in sorted(filenames):
            s, d = os.path.join(dirpath, name), os.path.join(dst_dir, name)
            if os.path.lexists(d):
                os.remove(d)
            shutil.copyfile(s, d)
            os.chmod(d, 0o755 if os.stat(s).st_mode & stat.S_IXUSR else 0o644)


def symlinks(root, links):
    """links: {path: target}, replacing whatever is at path."""
    for path, target in sorted(links.items()):
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if os.path.lexists(full):
            os.remove(full)
        os.symlink(target, full)


def ca_bundle(root):
    """Write etc/ssl/certs/ca-certificates.crt as update-ca-certificates would with Debian's
    default selection (every certificate ca-certificates ships): that program runs from the
    package's maintainer script, which never runs here. Sorted, so the image is reproducible.
    Returns how many certificates went in (0: the image has no ca-certificates)."""
    src = os.path.join(root, "usr/share/ca-certificates")
    if not os.path.isdir(src):
        return 0
    certs = sorted(os.path.relpath(os.path.join(d, f), src)
                   for d, _, files in os.walk(src) for f in files if f.endswith(".crt"))
    out_dir = os.path.join(root, "etc/ssl/certs")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "ca-certificates.crt"), "wb") as out:
        for rel in certs:
            with open(os.path.join(src, rel), "rb") as f:
                pem = f.read()
            out.write(pem if pem.endswith(b"\n") else pem + b"\n")
    return len(certs)


def mountpoints(root, dirs):
    """dirs: {path: octal mode string}; empty directories the runner mounts over."""
    for path, mode in sorted(dirs.items()):
        full = os.path.join(root, path)
        os.makedirs(full, exist_ok=True)
        os.chmod(full, int(mode, 8))


def bytecompile(root, patterns):
    """Compile the .py files under the globbed directories to unchecked-hash .pyc with the
    image's own interpreter (chroot, as root) or, when not root, the build machine's python3
    of the same minor version."""
    dirs = sorted({os.path.relpath(p, root) for pat in patterns
                   for p in glob.glob(os.path.join(root, pat)) if os.path.isdir(p)})
    if not dirs:
        return
    args = ["-m", "compileall", "-q", "-f", "--invalidation-mode", "unchecked-hash"]
    env = {"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    if os.geteuid() == 0:
        argv = [tool("chroot"), root, "/usr/bin/python3", "-s", *args,
                *["/" + d for d in dirs]]
    else:
        ver = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        if not os.path.isdir(os.path.join(root, "usr/lib", ver)):
            raise BuildError(f"not root and the image's Python is not {ver}: run as root "
                             "(the image's interpreter is run with chroot)")
        log("not root: compiling with the build machine's python3")
        argv = [sys.executable, "-s", *args, "-s", root, "-p", "/",
                *[os.path.join(root, d) for d in dirs]]
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise BuildError(f"compileall failed: {proc.stdout.decode(errors='replace')[-2000:]}")
