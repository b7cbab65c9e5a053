"""Small helpers shared by the builder modules: running tools, hashing, locking."""

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys

# Tools live in sbin on Debian; a non-login root shell may not have it on PATH.
_EXTRA_PATH = ("/usr/local/sbin", "/usr/sbin", "/sbin")


class BuildError(Exception):
    """A build step failed; the message says which and why."""


def log(msg):
    print(f"build-image: {msg}", file=sys.stderr, flush=True)


def tool(name):
    """Absolute path of a required tool, or BuildError naming the package to install."""
    path = shutil.which(name)
    if path is None:
        for d in _EXTRA_PATH:
            cand = os.path.join(d, name)
            if os.access(cand, os.X_OK):
                return cand
        raise BuildError(f"{name} not found (see .ci/packages for what to install)")
    return path


def run(argv, *, cwd=None, env=None, capture=True, input_bytes=None):
    """Run argv; return stdout as text. Raise BuildError with stderr on failure."""
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    proc = subprocess.run(argv, cwd=cwd, env=full_env, input=input_bytes,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.PIPE)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        raise BuildError(f"{' '.join(map(str, argv[:4]))}... failed "
                         f"(exit {proc.returncode}): {err[-2000:]}")
    return proc.stdout.decode(errors="replace") if capture else ""


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def locked(path):
    """Exclusive flock on path: images built in parallel share the package and kernel
    caches, and only one of them may fill a cache entry at a time."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def write_file(path, data, mode=0o644):
    """Write bytes (or text) to path atomically: a reader sees the old or the new file."""
    if isinstance(data, str):
        data = data.encode()
    tmp = f"{path}.tmp"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def rmtree(path):
    if os.path.lexists(path):
        shutil.rmtree(path)
