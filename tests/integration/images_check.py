#!/usr/bin/python3
"""Checks of the built guest images (images/README.md is the contract they hold to).

    images_check.py CHECK IMAGE_DIR [args...]

Each CHECK is one ctest test (tests/integration/images.cmake). Exit 0 = pass, 1 = fail,
77 = skip; skipping goes through tests/lib/mustwork.sh, so under STOCKADE_MUST_WORK=1 (CI)
a skip is a failure. The checks use Debian's own tools (readelf, cpio, modinfo, debugfs,
qemu) rather than the builder's code, so a builder bug cannot hide itself.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MUSTWORK = os.path.join(HERE, "..", "lib", "mustwork.sh")
REQUIRED_CMDLINE = ("console=ttyS0", "stockade.root=/dev/vda",
                    "stockade.port=org.stockade.runner.0", "panic=-1")
FILES = ("vmlinux", "initramfs.cpio", "root.ext4")


class Fail(Exception):
    pass


def skip(why):
    """Exit through the shared shell helper (77, or failure when STOCKADE_MUST_WORK=1)."""
    sys.stdout.flush()
    os.execvp("bash", ["bash", "-c", '. "$0"; skip "$1"', MUSTWORK, why])


def need_tool(name):
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}")
                                       if os.access(p, os.X_OK)), None)
    if path is None:
        skip(f"{name} is not installed")
    return path


def sh(*argv, check=True, text_out=True, **kw):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if check and proc.returncode != 0:
        raise Fail(f"{' '.join(argv)}: exit {proc.returncode}: "
                   f"{proc.stderr.decode(errors='replace')[-1000:]}")
    return proc.stdout.decode(errors="replace") if text_out else proc.stdout


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_manifest(d):
    with open(os.path.join(d, "manifest.json")) as f:
        return json.load(f)


def check_manifest(d):
    m = load_manifest(d)
    names = sorted(f["name"] for f in m["files"])
    if names != sorted(FILES):
        raise Fail(f"manifest lists {names}, want {sorted(FILES)}")
    h = hashlib.sha256(b"stockade-image-v1\n")
    for f in m["files"]:
        path = os.path.join(d, f["name"])
        if os.path.getsize(path) != f["size"] or sha256(path) != f["sha256"]:
            raise Fail(f"{f['name']}: size or sha256 differs from the manifest")
        h.update(f"{f['name']} {f['sha256']}\n".encode())
    h.update(f"cmdline {m['cmdline']}\n".encode())
    if h.hexdigest() != m["content_hash"]:
        raise Fail("content_hash is not sha256 over the file hashes and the cmdline")
    words = m["cmdline"].split()
    missing = [w for w in REQUIRED_CMDLINE if w not in words]
    if missing:
        raise Fail(f"cmdline lacks {missing}")
    for key in ("package", "version", "release"):
        if not m["kernel"].get(key):
            raise Fail(f"manifest kernel.{key} is empty")
    if "busybox-static" not in m["packages"]:
        raise Fail("manifest packages lack busybox-static")
    print(f"manifest ok: {m['name']} {m['content_hash'][:16]} kernel {m['kernel']['release']}")


def check_vmlinux(d):
    readelf = need_tool("readelf")
    path = os.path.join(d, "vmlinux")
    hdr = sh(readelf, "-h", path)
    if not re.search(r"Class:\s+ELF64", hdr) or not re.search(r"Type:\s+EXEC", hdr):
        raise Fail("vmlinux is not an ELF64 executable")
    notes = sh(readelf, "-n", path)
    # XEN_ELFNOTE_PHYS32_ENTRY = 18: the PVH entry point QEMU boots directly.
    if not re.search(r"^\s+Xen\s+0x[0-9a-f]+\s+Unknown note type: \(0x00000012\)", notes, re.M):
        raise Fail("vmlinux has no Xen note XEN_ELFNOTE_PHYS32_ENTRY (PVH entry)")
    release = load_manifest(d)["kernel"]["release"]
    with open(path, "rb") as f:
        if f"Linux version {release} ".encode() not in f.read():
            raise Fail(f"vmlinux does not say 'Linux version {release}'")
    print(f"vmlinux ok: ELF64 with PVH entry note, Linux {release}")


def _modinfo(modinfo, path, field):
    return [v for v in sh(modinfo, "-F", field, path).split("\n") if v]


def check_initramfs(d):
    cpio, modinfo = need_tool("cpio"), need_tool("modinfo")
    archive = os.path.join(d, "initramfs.cpio")
    with open(archive, "rb") as f:
        listing = sh(cpio, "-it", "--quiet", input=f.read()).split()
    for want in ("init", "etc/stockade/modules", "dev", "proc", "sys", "newroot"):
        if want not in listing:
            raise Fail(f"initramfs lacks /{want}")
    m = load_manifest(d)
    with tempfile.TemporaryDirectory() as tmp, open(archive, "rb") as f:
        sh(cpio, "-idm", "--quiet", "--no-absolute-filenames", cwd=tmp, input=f.read())
        init = os.path.join(tmp, "init")
        if os.stat(init).st_mode & 0o777 != 0o755:
            raise Fail("/init is not mode 0755")
        if "INTERP" in sh(need_tool("readelf"), "-l", init):
            raise Fail("/init is not statically linked")
        if sha256(init) != m["runner_sha256"]:
            raise Fail("/init is not the runner the manifest names")
        with open(os.path.join(tmp, "etc/stockade/modules")) as lf:
            order = [ln.strip() for ln in lf if ln.strip()]
        if order != m["modules"]:
            raise Fail("load-order file and manifest disagree")
        loaded, provided = set(), set()
        for fname in order:
            path = os.path.join(tmp, "lib/modules", fname)
            if f"lib/modules/{fname}" not in listing or not os.path.exists(path):
                raise Fail(f"load order names {fname}, not in the initramfs")
            for dep in filter(None, ",".join(_modinfo(modinfo, path, "depends")).split(",")):
                if dep.replace("-", "_") not in loaded:
                    raise Fail(f"{fname} needs {dep}, which is not loaded before it")
            for line in _modinfo(modinfo, path, "softdep"):
                pre = re.search(r"pre:\s*(.*?)(?:\s+post:|$)", line)
                for alias in (pre.group(1).split() if pre else []):
                    if alias.replace("-", "_") not in loaded and alias not in provided:
                        raise Fail(f"{fname} wants {alias} first; nothing before it provides it")
            name = _modinfo(modinfo, path, "name")
            loaded.add((name[0] if name else fname[:-3]).replace("-", "_"))
            provided.update(_modinfo(modinfo, path, "alias"))
        for want in ("virtio_ring", "virtio", "virtio_pci", "virtio_console", "virtio_blk",
                     "virtio_rng", "ext4"):
            if want not in loaded:
                raise Fail(f"module {want} missing from the load order")
    print(f"initramfs ok: /init + {len(order)} modules in dependency order: {' '.join(order)}")


def _debugfs(image, request):
    return sh(need_tool("debugfs"), "-R", request, image)


def _stat_type(image, path):
    out = _debugfs(image, f"stat {path}")
    m = re.search(r"Type: (\w+)", out)
    return m.group(1) if m else None


def check_root(d, *paths):
    image = os.path.join(d, "root.ext4")
    sb = sh(need_tool("dumpe2fs"), "-h", image)
    if "has_journal" in re.search(r"Filesystem features:(.*)", sb).group(1):
        raise Fail("root.ext4 has a journal")
    for p in ("workspace", "tmp", "proc", "sys", "dev", "run"):
        if _stat_type(image, f"/{p}") != "directory":
            raise Fail(f"/{p} is not a directory in root.ext4")
    for p in ("/usr/bin/busybox", "/usr/bin/sh", "/bin") + paths:
        if _stat_type(image, p) is None:
            raise Fail(f"{p} missing from root.ext4")
    passwd = _debugfs(image, "cat /etc/passwd")
    if not re.search(r"^root:x:0:0:[^:]*:[^:]*:[^:\n]*$", passwd, re.M) or \
            not re.search(r"^user:x:1000:1000:[^:]*:/workspace:[^:\n]*$", passwd, re.M):
        raise Fail(f"/etc/passwd lacks root:0 or user:1000 with home /workspace:\n{passwd}")
    group = _debugfs(image, "cat /etc/group")
    if not re.search(r"^user:x:1000:", group, re.M) or not re.search(r"^root:x:0:", group, re.M):
        raise Fail("/etc/group lacks root:0 or user:1000")
    sh(need_tool("e2fsck"), "-fn", image)
    print(f"root ok: mount points, busybox, passwd/group, fsck clean; {' '.join(paths)}")


def check_noop(d, *builder_argv):
    """Run the builder again with the build's own arguments: nothing may change."""
    before = {n: (os.stat(os.path.join(d, n)).st_mtime_ns, sha256(os.path.join(d, n)))
              for n in FILES + ("manifest.json",)}
    proc = subprocess.run(builder_argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.decode(errors="replace")
    if proc.returncode != 0 or "up to date" not in out:
        raise Fail(f"second builder run was not a no-op:\n{out}")
    after = {n: (os.stat(os.path.join(d, n)).st_mtime_ns, sha256(os.path.join(d, n)))
             for n in before}
    if after != before:
        raise Fail("second builder run changed an output's mtime or bytes")
    print("no-op ok: " + out.strip().splitlines()[-1])


def check_rebuild(d, python3, builder, recipe, runner, cache):
    """A changed input (the runner's bytes) rebuilds only what it feeds: initramfs.cpio,
    manifest.json and content_hash change; vmlinux and root.ext4 keep bytes and mtime."""
    with tempfile.TemporaryDirectory() as tmp:
        out, work, runner2 = os.path.join(tmp, "out"), os.path.join(tmp, "work"), \
            os.path.join(tmp, "runner")
        base = [python3, builder, "--recipe", recipe, "--out", out, "--work", work,
                "--cache", cache]
        sh(*base, "--runner", runner)
        first = load_manifest(out)
        mtimes = {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in FILES}
        shutil.copyfile(runner, runner2)
        with open(runner2, "ab") as f:
            f.write(b"\0stockade-rebuild-test\0")
        time.sleep(0.05)
        sh(*base, "--runner", runner2)
        second = load_manifest(out)
        if second["content_hash"] == first["content_hash"]:
            raise Fail("content_hash did not change with the runner")
        changed = [n for n in FILES if os.stat(os.path.join(out, n)).st_mtime_ns != mtimes[n]]
        if changed != ["initramfs.cpio"]:
            raise Fail(f"a runner change rewrote {changed}, want only initramfs.cpio")
        again = subprocess.run(base + ["--runner", runner2], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        if "up to date" not in again:
            raise Fail(f"third run was not a no-op: {again}")
    print("rebuild ok: runner change -> new initramfs.cpio and content_hash only")


PYTHON_JOB = r"""
import csv, datetime, subprocess, zoneinfo
with open("/tmp/in.csv", "w", newline="") as f:
    f.write("name,age\n Alice ,30\nbob,\nCarol,41\n")
with open("/tmp/in.csv", newline="") as f, open("/tmp/out.csv", "w", newline="") as g:
    w = csv.writer(g, lineterminator="\n")
    w.writerow(["name", "age"])
    for r in csv.DictReader(f):
        if r["age"]:
            w.writerow([r["name"].strip().title(), int(r["age"])])
print(open("/tmp/out.csv").read().replace("\n", "|"))
print(datetime.datetime(2026, 7, 1, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")).utcoffset())
print(subprocess.run(["sh", "-c", "id -u user"], capture_output=True, text=True).stdout.strip())
"""


def check_python_runs(d):
    """Unpack root.ext4 (debugfs rdump, no mount) and run a CSV job with its python3."""
    if os.geteuid() != 0:
        skip("chroot needs root")
    with tempfile.TemporaryDirectory() as tmp:
        sh(need_tool("debugfs"), "-R", f"rdump / {tmp}", os.path.join(d, "root.ext4"))
        os.makedirs(os.path.join(tmp, "tmp"), exist_ok=True)
        out = sh(need_tool("chroot"), tmp, "/usr/bin/python3", "-c", PYTHON_JOB,
                 env={"PATH": "/usr/bin:/bin", "HOME": "/workspace"})
    want = ["name,age|Alice,30|Carol,41|", "2:00:00", "1000"]
    if out.split() != " ".join(want).split():
        raise Fail(f"python job printed {out!r}, want {want}")
    print("python ok: CSV cleaned, zoneinfo and subprocess work")


DATA_JOB = r"""
import io, json, subprocess
import numpy, scipy.linalg, pandas, openpyxl, requests, bs4
import matplotlib.pyplot as plt
print(scipy.linalg.inv(numpy.array([[2.0, 0.0], [0.0, 4.0]])).sum())  # BLAS/LAPACK links
df = pandas.DataFrame({"a": [1, 2, 3]})
buf = io.BytesIO()
df.to_excel(buf, index=False)
print(int(pandas.read_excel(io.BytesIO(buf.getvalue()))["a"].sum()))
print(bs4.BeautifulSoup("<p>hi<b>x</b></p>", "lxml").b.text)
plt.plot([1, 2])
png = io.BytesIO()
plt.savefig(png, format="png")
print(png.getvalue()[:4] == b"\x89PNG")
k = subprocess.run(["python3", "/usr/lib/stockade/kernel.py"], capture_output=True, text=True,
                   input=json.dumps({"run": 1, "code": "x = 41\nx + 1"}) + "\n")
print([json.loads(l).get("data", {}).get("text/plain") for l in k.stdout.splitlines()][1])
# adopted as a pre-started kernel is: the runner's header, then a cell. Every generator the
# preload seeded is one reseed() replaces: none other is left (the import-time SeedSequence of
# numpy's global state goes with its reseeding)
GENERATORS = '''import gc, os, random, numpy
known = {id(random._inst), id(numpy.random.mtrand._rand),
         id(numpy.random.mtrand._rand._bit_generator)}
kinds = (numpy.random.RandomState, numpy.random.Generator, numpy.random.BitGenerator,
         numpy.random.SeedSequence)
(os.getcwd(), os.environ.get("A"),
 sorted(type(o).__name__ for o in gc.get_objects() if id(o) not in known and
        ((isinstance(o, random.Random) and not isinstance(o, random.SystemRandom)) or
         isinstance(o, kinds))))'''
body = b"/tmp\0A=b\0"
k = subprocess.run(["python3", "/usr/lib/stockade/kernel.py"], capture_output=True,
                   input=b"STOCKADE-ADOPT %d\n" % len(body) + body +
                   json.dumps({"run": 2, "code": GENERATORS}).encode() + b"\n")
print([json.loads(l).get("data", {}).get("text/plain") for l in k.stdout.splitlines()][1])
"""


def check_data_runs(d):
    """The data image's stack in a chroot of its root: BLAS/LAPACK through the alternatives
    links the recipe makes, pandas with openpyxl, bs4 with lxml, a matplotlib PNG, and the
    code kernel answering one cell, and adopted (issue 25): no generator left that its reseed
    does not replace."""
    if os.geteuid() != 0:
        skip("chroot needs root")
    with tempfile.TemporaryDirectory() as tmp:
        sh(need_tool("debugfs"), "-R", f"rdump / {tmp}", os.path.join(d, "root.ext4"))
        os.makedirs(os.path.join(tmp, "tmp"), exist_ok=True)
        out = sh(need_tool("chroot"), tmp, "/usr/bin/python3", "-c", DATA_JOB,
                 env={"PATH": "/usr/bin:/bin", "HOME": "/workspace", "MPLBACKEND": "Agg",
                      "MPLCONFIGDIR": "/tmp/mpl"})
    want = ["0.75", "6", "x", "True", "42", "('/tmp', 'b', [])"]
    if out.strip().splitlines() != want:
        raise Fail(f"data job printed {out!r}, want {want}")
    print("data ok: numpy/scipy (BLAS, LAPACK), pandas + openpyxl, bs4 + lxml, PNG, kernel; "
          "an adopted kernel holds no generator its reseed misses")


def check_boot(d, timeout_s="120"):
    """Boot the image under TCG the way the daemon will (PVH vmlinux, initramfs, read-only
    root on virtio, the runner's virtio-serial port, virtio-rng) and wait until the kernel
    runs /init. With the placeholder runner that is all there is to see."""
    qemu = need_tool("qemu-system-x86_64")
    m = load_manifest(d)
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "runner.sock")
        argv = _qemu_argv(qemu, d, os.path.join(d, "initramfs.cpio"),
                          m["cmdline"] + " stockade.debug=1 loglevel=7", sock)
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        seen, reached = [], None
        try:
            os.set_blocking(proc.stdout.fileno(), False)
            buf = b""
            while time.monotonic() - t0 < float(timeout_s) and reached is None:
                chunk = proc.stdout.read() or b""
                buf += chunk
                if b"Run /init as init process" in buf:
                    reached = time.monotonic() - t0
                if not chunk:
                    if proc.poll() is not None:
                        break
                    time.sleep(0.05)
            seen = buf.decode(errors="replace").splitlines()
        finally:
            proc.kill()
            proc.wait()
    if reached is None:
        raise Fail("kernel never ran /init; console tail:\n" + "\n".join(seen[-25:]))
    bad = [ln for ln in seen if "Kernel panic" in ln and "Attempted to kill init" not in ln]
    if bad:
        raise Fail(f"kernel panicked before /init: {bad[0]}")
    print(f"boot ok: kernel ran /init {reached:.1f} s after QEMU started (TCG)")


GUEST_INIT = r"""#!/bin/busybox sh
# Test /init (appended over the image's initramfs): does what the runner will do with the
# image - load the modules in the load-order file, mount the root read-only - then checks.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
up() { cut -d' ' -f1 /proc/uptime; }
t0=$(up)
while read m; do
    insmod "/lib/modules/$m" || echo "CHECK insmod-failed $m"
done < /etc/stockade/modules
echo "CHECK modules-loaded $t0 $(up)"
mount -t ext4 -o ro /dev/vda /newroot && echo "CHECK root-mounted $(up)"
mount -t tmpfs tmp /newroot/tmp; mount -t devtmpfs dev /newroot/dev
mount -t proc proc /newroot/proc
echo "CHECK port $(cat /sys/class/virtio-ports/*/name)"
echo "CHECK rng $(cat /sys/class/misc/hw_random/rng_current)"
echo "CHECK user $(chroot /newroot /bin/sh -c 'echo $(id -u user) ~user')"
if [ -e /newroot/usr/bin/python3 ]; then
    t=$(up)
    chroot /newroot /usr/bin/python3 -c 'import csv, io
print("CHECK python", list(csv.reader(io.StringIO("a,b\n1,2\n"))))'
    echo "CHECK python-cold $t $(up)"
fi
echo "CHECK done"
reboot -f
"""


def _cpio_overlay(tmp, busybox):
    """A newc archive with the test /init and a static busybox, made by GNU cpio."""
    stage = os.path.join(tmp, "stage")
    os.makedirs(os.path.join(stage, "bin"))
    shutil.copyfile(busybox, os.path.join(stage, "bin", "busybox"))
    os.chmod(os.path.join(stage, "bin", "busybox"), 0o755)
    with open(os.path.join(stage, "init"), "w") as f:
        f.write(GUEST_INIT)
    os.chmod(os.path.join(stage, "init"), 0o755)
    return sh(need_tool("cpio"), "-o", "-H", "newc", "--reproducible", "-R", "0:0", "--quiet",
              cwd=stage, input=b"init\nbin\nbin/busybox\n", text_out=False)


def _qemu_argv(qemu, d, initrd, append, sock):
    # -no-acpi: libvirt adds it when the domain has no <acpi/>, as the daemon's domains do.
    return [qemu, "-M", "pc", "-accel", "tcg", "-m", "256", "-nodefaults", "-no-reboot",
            "-no-acpi", "-display", "none", "-serial", "stdio", "-monitor", "none",
            "-kernel", os.path.join(d, "vmlinux"), "-initrd", initrd, "-append", append,
            "-drive", f"file={os.path.join(d, 'root.ext4')},if=virtio,format=raw,readonly=on",
            "-device", "virtio-serial-pci",
            "-chardev", f"socket,id=runner,path={sock},server=on,wait=off",
            "-device", "virtserialport,chardev=runner,name=org.stockade.runner.0",
            "-device", "virtio-rng-pci"]


def check_guest(d, timeout_s="240"):
    """Boot the image with a test /init that loads its modules in the listed order, mounts
    root.ext4 read-only from virtio, finds the runner's port and virtio-rng, and (python
    image) runs python3 from the root."""
    qemu = need_tool("qemu-system-x86_64")
    busybox = next((p for p in ("/bin/busybox", "/usr/bin/busybox") if os.path.exists(p)), None)
    if busybox is None or "INTERP" in sh(need_tool("readelf"), "-l", busybox):
        skip("needs busybox-static on the build machine")
    m = load_manifest(d)
    with tempfile.TemporaryDirectory() as tmp:
        initrd = os.path.join(tmp, "initrd.cpio")
        with open(os.path.join(d, "initramfs.cpio"), "rb") as f, open(initrd, "wb") as g:
            g.write(f.read() + _cpio_overlay(tmp, busybox))
        argv = _qemu_argv(qemu, d, initrd, m["cmdline"], os.path.join(tmp, "runner.sock"))
        t0 = time.monotonic()
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=float(timeout_s))
            out = proc.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace")
        wall = time.monotonic() - t0
    lines = {ln.split()[1]: ln.split()[2:] for ln in out.splitlines()
             if ln.startswith("CHECK ") and len(ln.split()) >= 2}
    failures = [ln for ln in out.splitlines() if ln.startswith("CHECK insmod-failed")]
    want = {"modules-loaded", "root-mounted", "done"}
    if failures or not want <= lines.keys():
        raise Fail(f"guest check failed ({failures or sorted(want - lines.keys())}); "
                   "console tail:\n" + "\n".join(out.splitlines()[-25:]))
    if lines.get("port") != ["org.stockade.runner.0"]:
        raise Fail(f"virtio-serial port not found: {lines.get('port')}")
    if lines.get("rng", [""])[0] != "virtio_rng.0":
        raise Fail(f"virtio-rng not active: {lines.get('rng')}")
    if lines.get("user") != ["1000", "/workspace"]:
        raise Fail(f"user 1000 / home /workspace not resolved in the guest: {lines.get('user')}")
    if m["name"] == "python" and lines.get("python") != ["[['a',", "'b'],", "['1',", "'2']]"]:
        raise Fail(f"python3 did not run in the guest: {lines.get('python')}")
    t_mod = lines["modules-loaded"]
    extra = ""
    if "python-cold" in lines:
        a, b = map(float, lines["python-cold"])
        extra = f", python3 cold start {b - a:.2f} s"
    print(f"guest ok: modules loaded {float(t_mod[1]) - float(t_mod[0]):.2f} s, root mounted at "
          f"{lines['root-mounted'][0]} s uptime{extra}; QEMU wall {wall:.1f} s")


CHECKS = {"manifest": check_manifest, "vmlinux": check_vmlinux, "initramfs": check_initramfs,
          "root": check_root, "noop": check_noop, "rebuild": check_rebuild,
          "python": check_python_runs, "data": check_data_runs, "boot": check_boot, "guest": check_guest}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in CHECKS:
        print(f"usage: {sys.argv[0]} {{{'|'.join(CHECKS)}}} IMAGE_DIR [args...]",
              file=sys.stderr)
        return 2
    d = sys.argv[2]
    if not os.path.exists(os.path.join(d, "manifest.json")):
        print(f"FAIL: {d}/manifest.json missing: build the images first "
              f"(cmake --build <build> --target images)", file=sys.stderr)
        return 1
    try:
        CHECKS[sys.argv[1]](d, *sys.argv[3:])
    except Fail as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
