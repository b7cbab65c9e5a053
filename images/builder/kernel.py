"""The guest kernel: which package, its uncompressed vmlinux, and the module set.

The kernel is the package that linux-image-amd64's candidate depends on. When exactly
that version is installed, its files are read from the system; otherwise its .deb is
fetched into the cache and unpacked there (and depmod writes modules.dep for it).
The vmlinux is the ELF inside Debian's bzImage (an XZ stream): booted directly through its
PVH entry it saves the ~5 s of decompression under TCG.
"""

import gzip
import lzma
import os
import struct
import subprocess

from . import apt
from .util import BuildError, log, run, tool, write_file

XEN_ELFNOTE_PHYS32_ENTRY = 18
_XZ_MAGIC = b"\xfd7zXZ\x00"
_MOD_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")


class Kernel:
    """package/version/release of the kernel, and root: a directory holding
    boot/vmlinuz-<release> and lib/modules/<release>/ (the system root, or an unpacked .deb)."""

    def __init__(self, package, version, release, root):
        self.package, self.version, self.release, self.root = package, version, release, root

    @property
    def moddir(self):
        return os.path.join(self.root, "lib/modules", self.release)


def _depends_kernel(meta_rec):
    for alt in meta_rec.get("Depends", "").split(","):
        dep = alt.split("|")[0].strip()
        name = dep.split()[0] if dep else ""
        if name.startswith("linux-image-"):
            m = dep.partition("(= ")[2].rstrip(")").strip()
            return name, m or None
    raise BuildError(f"{meta_rec.get('Package')} depends on no linux-image-* package")


def resolve(meta_package):
    """(package, version) of the kernel that meta_package's candidate points to."""
    name, ver = _depends_kernel(apt.candidate(meta_package))
    if ver is None:
        ver = apt.candidate(name)["Version"]
    return name, ver


def _installed_version(package):
    try:
        out = run([tool("dpkg-query"), "-W", "-f", "${Status}\t${Version}", package])
    except BuildError:
        return None
    status, _, ver = out.partition("\t")
    return ver if status == "install ok installed" else None


def obtain(package, version, cache_dir):
    """A Kernel for package=version: the installed files if that version is installed,
    else the .deb unpacked under cache_dir. Call with the cache lock held."""
    release = package[len("linux-image-"):]
    if _installed_version(package) == version:
        k = Kernel(package, version, release, "/")
        if os.path.exists(os.path.join(k.moddir, "modules.dep")) and \
                os.path.exists(os.path.join("/boot", f"vmlinuz-{release}")):
            return k
    root = os.path.join(cache_dir, f"{package}_{version}", "root")
    k = Kernel(package, version, release, root)
    if not os.path.exists(os.path.join(k.moddir, "modules.dep")):
        log(f"unpacking {package}={version} (not installed on this machine)")
        debs = apt.fetch({package: version}, os.path.join(cache_dir, "..", "debs"))
        tmp = root + ".tmp"
        run(["rm", "-rf", tmp])
        os.makedirs(tmp)
        apt.extract(debs, tmp)
        run([tool("depmod"), "-b", tmp, release])
        os.replace(tmp, root)
    return k


def _phdrs(elf):
    """Yield (p_type, p_offset, p_filesz) of each program header of a little-endian ELF64."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise BuildError("not a little-endian ELF64 file")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf,
                                                                  phoff + i * phentsize)
        yield p_type, p_offset, p_filesz


def is_static_executable(elf):
    """An ELF64 executable with no program interpreter (PT_INTERP)."""
    return all(t != 3 for t, _, _ in _phdrs(elf))


def _elf_notes(elf):
    """Yield (name, type, desc) of every PT_NOTE segment of a little-endian ELF64."""
    for p_type, p_offset, p_filesz in _phdrs(elf):
        if p_type != 4:  # PT_NOTE
            continue
        off, end = p_offset, p_offset + p_filesz
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, off)
            name = elf[off + 12:off + 12 + namesz].rstrip(b"\0")
            doff = off + 12 + ((namesz + 3) & ~3)
            yield name, ntype, elf[doff:doff + descsz]
            off = doff + ((descsz + 3) & ~3)


def has_pvh_entry(elf):
    return any(n == b"Xen" and t == XEN_ELFNOTE_PHYS32_ENTRY for n, t, _ in _elf_notes(elf))


def _decompress_vmlinux(bzimage):
    off = bzimage.find(_XZ_MAGIC)
    while off >= 0:
        try:
            out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(bzimage[off:])
            if out[:4] == b"\x7fELF":
                return out
        except lzma.LZMAError:
            pass
        off = bzimage.find(_XZ_MAGIC, off + 1)
    raise BuildError("no XZ-compressed ELF found in the kernel image "
                     "(Debian's amd64 kernels are XZ; another compression needs code here)")


def vmlinux(kernel, cache_dir):
    """Path of the cached, verified vmlinux of kernel (extracted once per version)."""
    path = os.path.join(cache_dir, f"{kernel.package}_{kernel.version}.vmlinux")
    if os.path.exists(path):
        return path
    with open(os.path.join(kernel.root, "boot", f"vmlinuz-{kernel.release}"), "rb") as f:
        elf = _decompress_vmlinux(f.read())
    if not has_pvh_entry(elf):
        raise BuildError("vmlinux has no XEN_ELFNOTE_PHYS32_ENTRY note: it cannot boot via "
                         "PVH (kernel built without CONFIG_PVH?)")
    if f"Linux version {kernel.release} ".encode() not in elf:
        raise BuildError(f"vmlinux does not say 'Linux version {kernel.release}'")
    write_file(path, elf)
    return path


def modname(path):
    base = os.path.basename(path)
    for suf in _MOD_SUFFIXES:
        if base.endswith(suf):
            base = base[:-len(suf)]
            break
    return base.replace("-", "_")


class ModuleIndex:
    """modules.dep, modules.softdep, modules.alias and modules.builtin of one kernel."""

    def __init__(self, moddir):
        self.moddir = moddir
        self.path, self.deps, self.pre, self.alias = {}, {}, {}, {}
        for line in self._lines("modules.dep"):
            mod, _, deps = line.partition(":")
            name = modname(mod)
            self.path[name] = mod
            self.deps[name] = [modname(d) for d in deps.split()]
        for line in self._lines("modules.softdep"):
            words = line.split()
            if len(words) < 3 or words[0] != "softdep":
                continue
            pre, section = [], None
            for w in words[2:]:
                if w.endswith(":"):
                    section = w
                elif section == "pre:":
                    pre.append(w)
            self.pre[modname(words[1])] = pre
        for line in self._lines("modules.alias"):
            words = line.split()
            if len(words) == 3 and words[0] == "alias":
                self.alias.setdefault(words[1], []).append(modname(words[2]))
        self.builtin = {modname(m) for m in self._lines("modules.builtin")}

    def _lines(self, name):
        path = os.path.join(self.moddir, name)
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]

    def _pick(self, alias):
        """One module for a soft dependency: the module of that name, else the *_generic
        one (a CPU-specific variant such as crc32c_intel fails to load under TCG)."""
        name = modname(alias)
        if name in self.path or name in self.builtin:
            return name
        cands = sorted(self.alias.get(alias, []))
        generic = [c for c in cands if c.endswith("_generic")]
        if generic or cands:
            return (generic or cands)[0]
        raise BuildError(f"no module provides {alias}")

    def load_order(self, wanted):
        """wanted and everything they need (hard and 'pre' soft dependencies), each after
        its dependencies; built-in modules are left out."""
        order, state = [], {}

        def visit(name, chain):
            if name in self.builtin or state.get(name) == "done":
                return
            if state.get(name) == "visiting":
                raise BuildError(f"module dependency cycle: {' -> '.join(chain + [name])}")
            if name not in self.path:
                raise BuildError(f"kernel has no module {name}")
            state[name] = "visiting"
            for alias in self.pre.get(name, []):
                visit(self._pick(alias), chain + [name])
            for dep in reversed(self.deps[name]):
                visit(dep, chain + [name])
            state[name] = "done"
            order.append(name)

        for w in wanted:
            visit(modname(w), [])
        return order

    def read_module(self, name):
        """(file name ending in .ko, uncompressed bytes) of one module."""
        path = os.path.join(self.moddir, self.path[name])
        with open(path, "rb") as f:
            data = f.read()
        base = os.path.basename(path)
        if base.endswith(".ko.xz"):
            data = lzma.decompress(data)
        elif base.endswith(".ko.gz"):
            data = gzip.decompress(data)
        elif base.endswith(".ko.zst"):
            proc = subprocess.run([tool("zstd"), "-dcq", path], stdout=subprocess.PIPE,
                                  check=False)
            if proc.returncode != 0:
                raise BuildError(f"zstd could not decompress {path}")
            data = proc.stdout
        return base[:base.index(".ko") + 3], data
