#!/usr/bin/python3
"""Build one Stockade guest image: vmlinux, initramfs.cpio, root.ext4 and manifest.json.

    build-image.py --recipe images/python --runner <stockade-runner> \
                   --out <build>/images/python --work <build>/images/.build

The layout is the contract in images/README.md. The build is reproducible: the same
inputs (recipe, common.json, overlay, this builder, the runner's bytes, the resolved
Debian package versions, e2fsprogs) give byte-identical files. When those inputs are
unchanged since the last build and the outputs are untouched, nothing is rewritten
(exit 0, "up to date"); a file whose bytes come out the same keeps its old mtime.
Python byte-code is compiled by the image's own interpreter under chroot when run as root,
else by this machine's python3 of the same minor version.
"""

import argparse
import glob
import json
import os
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from builder import apt, ext4, initramfs, kernel, manifest, rootfs  # noqa: E402
from builder.util import (BuildError, locked, log, run, rmtree, sha256_bytes,  # noqa: E402
                          sha256_file, tool, write_file)

HERE = os.path.dirname(os.path.abspath(__file__))


def _files_digest(paths, base):
    return {os.path.relpath(p, base): sha256_file(p) for p in sorted(paths)
            if os.path.isfile(p)}


def load_recipe(recipe_dir, common_path):
    with open(common_path) as f:
        common = json.load(f)
    with open(os.path.join(recipe_dir, "recipe.json")) as f:
        recipe = json.load(f)
    recipe["name"] = os.path.basename(os.path.normpath(recipe_dir))
    for key in ("trim", "keep", "bytecompile", "exclude"):
        recipe[key] = common.get(key, []) + recipe.get(key, [])
    return common, recipe


def inputs_of(args, common, recipe, runner_sha, kernel_pv, packages):
    """Everything the outputs depend on; the no-op check compares its hash."""
    builder_files = [os.path.abspath(__file__)] + \
        glob.glob(os.path.join(HERE, "builder", "*.py"))
    overlay = glob.glob(os.path.join(HERE, "overlay", "**"), recursive=True) + \
        glob.glob(os.path.join(args.recipe, "**"), recursive=True)
    mke2fs_conf = "/etc/mke2fs.conf"
    return {
        "builder": _files_digest(builder_files, HERE),
        "common": sha256_file(args.common),
        "recipe_and_overlay": _files_digest(overlay, HERE),
        "runner": runner_sha,
        "kernel": kernel_pv,
        "packages": packages,
        "epoch": common["source_date_epoch"],
        "e2fsprogs": run([tool("dpkg-query"), "-W", "-f", "${Version}", "e2fsprogs"]),
        "mke2fs.conf": sha256_file(mke2fs_conf) if os.path.exists(mke2fs_conf) else None,
    }


def up_to_date(out, state_path, inputs_hash):
    """True if the last build had these inputs and its outputs are as it left them."""
    try:
        with open(state_path) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return False
    if state.get("inputs_hash") != inputs_hash:
        return False
    for name, (size, mtime_ns) in state.get("outputs", {}).items():
        try:
            st = os.stat(os.path.join(out, name))
        except OSError:
            return False
        if (st.st_size, st.st_mtime_ns) != (size, mtime_ns):
            return False
    return bool(state.get("outputs"))


class Timer:
    def __init__(self):
        self.t0 = self.last = time.monotonic()

    def step(self, what):
        now = time.monotonic()
        log(f"{what}: {now - self.last:.1f} s")
        self.last = now


def build_root(tmp, debs, common, recipe, timer):
    tree = os.path.join(tmp, "root")
    os.makedirs(tree)
    apt.extract(debs, tree)
    rootfs.usr_merge(tree)
    rootfs.trim(tree, recipe["trim"], recipe["keep"])
    links = rootfs.busybox_links(tree)
    rootfs.copy_overlay(os.path.join(HERE, "overlay"), tree)
    rootfs.copy_overlay(os.path.join(recipe["dir"], "overlay"), tree)
    rootfs.symlinks(tree, {**common.get("symlinks", {}), **recipe.get("symlinks", {})})
    rootfs.mountpoints(tree, common["mountpoints"])
    certs = rootfs.ca_bundle(tree)
    timer.step(f"root tree ({len(debs)} packages, {links} busybox links, {certs} CA certificates)")
    rootfs.bytecompile(tree, recipe["bytecompile"])
    timer.step("python byte-code")
    image = os.path.join(tmp, "root.ext4")
    ext4.make(tree, image, label=f"stockade-{recipe['name']}",
              epoch=common["source_date_epoch"],
              margin_pct=recipe.get("margin_percent", 5), margin_mib=recipe.get("margin_mib", 2))
    timer.step("root.ext4")
    rmtree(tree)
    return image


def install(tmp, out, names):
    """Move each new file into out unless out already has the same bytes (keeps mtime)."""
    os.makedirs(out, exist_ok=True)
    for name in names:
        src, dst = os.path.join(tmp, name), os.path.join(out, name)
        if os.path.exists(dst) and sha256_file(dst) == sha256_file(src):
            os.remove(src)
        else:
            os.replace(src, dst)


def read_runner(path):
    if not os.path.exists(path):
        raise BuildError(f"runner {path} does not exist")
    with open(path, "rb") as f:
        runner = f.read()
    if not kernel.is_static_executable(runner):
        raise BuildError(f"{path} must be a static ELF executable (it runs as /init)")
    return runner


def gather(cache, common, kpkg, kver, packages):
    """Fill the shared cache (under its lock): kernel, vmlinux, .debs, modules in order."""
    with locked(os.path.join(cache, "cache.lock")):
        k = kernel.obtain(kpkg, kver, os.path.join(cache, "kernel"))
        vmlinux = kernel.vmlinux(k, os.path.join(cache, "kernel"))
        debs = apt.fetch(packages, os.path.join(cache, "debs"))
        index = kernel.ModuleIndex(k.moddir)
        modules = [index.read_module(m) for m in index.load_order(common["modules"])]
    return k, vmlinux, debs, modules


def write_manifest(tmp, common, recipe, k, modules, packages, runner):
    files = [{"name": n, "size": os.path.getsize(os.path.join(tmp, n)),
              "sha256": sha256_file(os.path.join(tmp, n))} for n in manifest.FILES]
    text = manifest.render(
        name=recipe["name"], description=recipe.get("description", ""),
        kernel={"package": k.package, "version": k.version, "release": k.release},
        cmdline=" ".join(common["cmdline"]), files=files,
        modules=[fname for fname, _ in modules], packages=packages,
        runner_sha256=sha256_bytes(runner), epoch=common["source_date_epoch"])
    write_file(os.path.join(tmp, "manifest.json"), text)
    return json.loads(text)


def record_state(state_path, out, inputs, inputs_hash):
    outputs = {}
    for n in list(manifest.FILES) + ["manifest.json"]:
        st = os.stat(os.path.join(out, n))
        outputs[n] = [st.st_size, st.st_mtime_ns]
    write_file(state_path, json.dumps({"inputs_hash": inputs_hash, "inputs": inputs,
                                       "outputs": outputs}, indent=1, sort_keys=True))


def build(args):
    timer = Timer()
    common, recipe = load_recipe(args.recipe, args.common)
    recipe["dir"] = args.recipe
    name, work, out = recipe["name"], os.path.abspath(args.work), os.path.abspath(args.out)
    cache = os.path.abspath(args.cache or os.path.join(work, "cache"))
    runner = read_runner(args.runner)

    kpkg, kver = kernel.resolve(common["kernel_package"])
    packages = apt.resolve(recipe["packages"], recipe["exclude"],
                           os.path.join(work, f"{name}.apt"))
    inputs = inputs_of(args, common, recipe, sha256_bytes(runner),
                       {"package": kpkg, "version": kver}, packages)
    inputs_hash = sha256_bytes(json.dumps(inputs, sort_keys=True).encode())
    state_path = os.path.join(work, f"{name}.state.json")
    if not args.force and up_to_date(out, state_path, inputs_hash):
        log(f"{name}: up to date ({inputs_hash[:12]})")
        return
    timer.step(f"{name}: resolved {len(packages)} packages, kernel {kpkg}={kver}")

    k, vmlinux, debs, modules = gather(cache, common, kpkg, kver, packages)
    timer.step(f"kernel {k.release}, {len(modules)} modules, packages fetched")
    tmp = os.path.join(work, f"{name}.tmp")
    rmtree(tmp)
    os.makedirs(tmp)
    write_file(os.path.join(tmp, "initramfs.cpio"),
               initramfs.build(runner, modules, common["source_date_epoch"]))
    build_root(tmp, debs, common, recipe, timer)
    with open(vmlinux, "rb") as f:
        write_file(os.path.join(tmp, "vmlinux"), f.read())
    doc = write_manifest(tmp, common, recipe, k, modules, packages, runner)
    install(tmp, out, list(manifest.FILES) + ["manifest.json"])
    record_state(state_path, out, inputs, inputs_hash)
    rmtree(tmp)
    log(f"{name}: built in {time.monotonic() - timer.t0:.1f} s, content_hash "
        f"{doc['content_hash'][:16]}, " +
        ", ".join(f"{f['name']} {f['size'] / 1048576:.1f} MiB" for f in doc["files"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--recipe", required=True, help="recipe directory (images/<name>)")
    p.add_argument("--common", default=os.path.join(HERE, "common.json"))
    p.add_argument("--runner", required=True, help="the static stockade-runner binary")
    p.add_argument("--out", required=True, help="output directory for this image")
    p.add_argument("--work", required=True, help="state and scratch directory")
    p.add_argument("--cache", help="package and kernel cache, shared by images "
                   "(default: <work>/cache)")
    p.add_argument("--stamp", help="file to touch on success (the build system's output)")
    p.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = p.parse_args()
    args.recipe = os.path.abspath(args.recipe)
    try:
        build(args)
    except BuildError as e:
        log(f"error: {e}")
        return 1
    if args.stamp:
        os.makedirs(os.path.dirname(os.path.abspath(args.stamp)), exist_ok=True)
        with open(args.stamp, "a"):
            pass
        os.utime(args.stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
