"""Debian packages through the build machine's own apt configuration.

resolve() asks apt which packages (with versions) an install of the recipe's packages
would bring onto an empty system, treating the recipe's excluded packages as already
present (so neither they nor what only they need come in). fetch() puts those exact
versions in a cache, verified against the SHA256 of apt's package index; extract()
unpacks them. No mirror host name appears anywhere: apt-get decides where from.
"""

import os
import re
import shutil

from .util import BuildError, log, run, sha256_file, tool

# An excluded package is "installed" at a version no archive has, with no dependencies.
_EXCLUDED_VERSION = "999:stockade-excluded"
_INST_RE = re.compile(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) ")


def host_arch():
    return run([tool("dpkg"), "--print-architecture"]).strip()


def _excluded_status(excluded, arch):
    """A dpkg status file in which only the excluded packages are installed."""
    stanzas = []
    for name in sorted(excluded):
        stanzas.append(f"Package: {name}\nStatus: install ok installed\n"
                       f"Version: {_EXCLUDED_VERSION}\nArchitecture: {arch}\n"
                       f"Multi-Arch: allowed\n"
                       f"Maintainer: stockade\nDescription: excluded from the image\n")
    return "\n".join(stanzas)


def resolve(packages, excluded, workdir):
    """Return {name: version} apt would install for packages on an empty system."""
    arch = host_arch()
    status = os.path.join(workdir, "excluded.status")
    os.makedirs(workdir, exist_ok=True)
    with open(status, "w") as f:
        f.write(_excluded_status(excluded, arch))
    out = run([tool("apt-get"), "-s", "-q", "-o", f"Dir::State::status={status}",
               "-o", "APT::Install-Recommends=false", "-o", "APT::Install-Suggests=false",
               "-o", "Debug::NoLocking=true", "install", *packages])
    found = {}
    for line in out.splitlines():
        m = _INST_RE.match(line)
        if m:
            found[m.group(1).split(":")[0]] = m.group(2)
    missing = [p for p in packages if p not in found]
    if missing:
        raise BuildError(f"apt would not install {missing} (run apt-get update?)")
    return dict(sorted(found.items()))


def _records(text):
    rec = {}
    key = None
    for line in text.splitlines() + [""]:
        if not line.strip():
            if rec:
                yield rec
            rec, key = {}, None
        elif line[0] in " \t" and key:
            rec[key] += "\n" + line.strip()
        elif ":" in line:
            key, _, val = line.partition(":")
            rec[key] = val.strip()


def index_records(pinned):
    """apt's index record for each name=version in pinned ({name: version})."""
    out = run([tool("apt-cache"), "show", *[f"{n}={v}" for n, v in sorted(pinned.items())]])
    recs = {}
    for rec in _records(out):
        key = (rec.get("Package"), rec.get("Version"))
        recs.setdefault(key, rec)
    for name, ver in pinned.items():
        if (name, ver) not in recs:
            raise BuildError(f"apt has no index record for {name}={ver}")
    return {name: recs[(name, ver)] for name, ver in pinned.items()}


def candidate(name):
    """The candidate version's index record of one package."""
    out = run([tool("apt-cache"), "show", "--no-all-versions", name])
    for rec in _records(out):
        return rec
    raise BuildError(f"apt knows no package {name} (run apt-get update?)")


def deb_name(name, version, arch):
    return f"{name}_{version.replace(':', '%3a')}_{arch}.deb"


def fetch(pinned, cache_dir):
    """Make cache_dir hold each name=version .deb; return {name: path}. Each file is
    checked against the SHA256 in apt's index; apt's own archive cache is used when it
    already has the file, apt-get download otherwise."""
    os.makedirs(cache_dir, exist_ok=True)
    recs = index_records(pinned)
    paths, todo = {}, []
    for name, ver in sorted(pinned.items()):
        rec = recs[name]
        want = rec.get("SHA256")
        fname = deb_name(name, ver, rec.get("Architecture", host_arch()))
        path = os.path.join(cache_dir, fname)
        paths[name] = path
        if os.path.exists(path) and sha256_file(path) == want:
            continue
        sys_copy = os.path.join("/var/cache/apt/archives", fname)
        if os.path.exists(sys_copy) and sha256_file(sys_copy) == want:
            shutil.copyfile(sys_copy, path)
            continue
        todo.append(f"{name}={ver}")
    if todo:
        log(f"downloading {len(todo)} package(s) with apt-get")
        # As root, apt would try (and fail) to write as _apt into our cache, then warn.
        sandbox = ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []
        run([tool("apt-get"), "download", "-q", *sandbox, *todo], cwd=cache_dir)
    for name, path in paths.items():
        if not os.path.exists(path) or sha256_file(path) != recs[name].get("SHA256"):
            raise BuildError(f"{path}: missing or does not match apt's SHA256")
    return paths


def extract(debs, root):
    """Unpack .debs into root in name order (the later one wins a shared path)."""
    for name in sorted(debs):
        run([tool("dpkg-deb"), "-x", debs[name], root])
