#!/usr/bin/env python3
"""The memory templates' folder made first by another user, through a real stockaded (issue 25,
finding 2). One start of a daemon with a tiny minimal pool (template mode, TCG) and a fresh
state directory.

Before the start, uid 65534 makes /dev/shm/stockade-<12 hex of sha256(state_dir)> (the name the
daemon would choose) 0777, with a minimal.state, .mem and .key of its own. The daemon must:
- refuse that folder with a clear log line, leave it exactly as it was (owner, mode, files),
  and keep guest_memory = template in a folder of its own (the pool fills from it);
- leave uid 65534 nothing to reach: every entry of the templates' folder and of the state
  directory (guests, snapshots, the extraction appliance's overlays), and every folder above
  them, is checked by owner and mode, and a process running as uid 65534 tries to list, read,
  write, connect to and create in each of them (it may read only status.json and the empty
  workspace image, which are not secrets);
- remove its own folder at the clean stop, as before.
"""
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stockade_fixture import Daemon  # noqa: E402

NOBODY = 65534
PLANTED = b"uid 65534 was here\n"
PLANTED_FILES = ("minimal.mem", "minimal.state", "minimal.key")
# Readable by anyone by design: the daemon's status, and the pristine empty workspace image.
PUBLIC_READ = (re.compile(r"/status\.json$"), re.compile(r"/templates/workspace-\d+m\.raw$"))

# Runs as uid 65534: for each path, what it managed to do (it should manage nothing).
PROBE = r"""
import json, os, socket, stat, sys
done = []
for p in json.load(sys.stdin):
    try:
        st = os.lstat(p)
    except OSError:
        continue  # cannot even see it: the folder above keeps it out
    if stat.S_ISDIR(st.st_mode):
        try:
            os.listdir(p); done.append(["list", p])
        except OSError:
            pass
        probe = os.path.join(p, ".uid65534")
        try:
            os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            done.append(["create in", p]); os.unlink(probe)
        except OSError:
            pass
    elif stat.S_ISSOCK(st.st_mode):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(p); done.append(["connect", p])
        except OSError:
            pass
        s.close()
    elif not stat.S_ISLNK(st.st_mode):
        for how, flags in (("read", os.O_RDONLY), ("write", os.O_WRONLY)):
            try:
                os.close(os.open(p, flags | os.O_NOFOLLOW | os.O_NONBLOCK)); done.append([how, p])
            except OSError:
                pass
json.dump(done, sys.stdout)
"""


def tree(root):
    """root and everything below it (no symlink followed)."""
    out = [root]
    for dirpath, dirs, files in os.walk(root):
        out += [os.path.join(dirpath, n) for n in dirs + files]
    return out


def parents(path):
    out = []
    while path != "/":
        path = os.path.dirname(path)
        out.append(path)
    return out


def check_modes(paths, above):
    """No entry is uid 65534's; no folder is writable by group or others (a folder above ours
    may be if sticky: then nobody can rename or remove what is not theirs); no file or socket
    is writable by others or by uid 65534's group."""
    bad = []
    for p in paths:
        st = os.lstat(p)
        mode = st.st_mode & 0o7777
        if st.st_uid == NOBODY or st.st_gid == NOBODY and st.st_mode & stat.S_IWGRP:
            bad.append(f"{p} is uid {NOBODY}'s (uid {st.st_uid} gid {st.st_gid} mode {mode:04o})")
        if stat.S_ISDIR(st.st_mode):
            if mode & 0o022 and not (above and mode & stat.S_ISVTX):
                bad.append(f"folder {p} is writable by others (mode {mode:04o})")
        elif not stat.S_ISLNK(st.st_mode) and mode & stat.S_IWOTH:
            bad.append(f"{p} is writable by others (mode {mode:04o})")
    return bad


def as_nobody(paths):
    # the system's interpreter: one under root's home (pyenv) is not uid 65534's to run
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    r = subprocess.run([python, "-c", PROBE], input=json.dumps(paths), text=True,
                       capture_output=True, user=NOBODY, group=NOBODY, extra_groups=[],
                       timeout=60)
    assert r.returncode == 0, f"probe as uid {NOBODY} failed: {r.stderr}"
    return json.loads(r.stdout)


def make_squat(path):
    os.mkdir(path, 0o700)
    for name in PLANTED_FILES:
        p = os.path.join(path, name)
        with open(p, "wb") as f:
            f.write(PLANTED)
        os.chown(p, NOBODY, NOBODY)
        os.chmod(p, 0o666)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o777)


def check_squat_untouched(path):
    st = os.lstat(path)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == NOBODY and st.st_mode & 0o7777 == 0o777, \
        f"{path} was changed: uid {st.st_uid} mode {st.st_mode & 0o7777:04o}"
    assert sorted(os.listdir(path)) == sorted(PLANTED_FILES), \
        f"{path} holds {sorted(os.listdir(path))}"
    for name in PLANTED_FILES:
        with open(os.path.join(path, name), "rb") as f:
            assert f.read() == PLANTED, f"{path}/{name} was rewritten"


def main():
    d = Daemon(pools={"minimal": dict(warm=1, slots=1)}, extra_conf="[daemon]\naccel = tcg\n",
               prefix="stkdirs" + secrets.token_hex(2) + "-")
    state_dir = os.path.join(d.state, "state")
    squat = "/dev/shm/stockade-" + hashlib.sha256(state_dir.encode()).hexdigest()[:12]
    make_squat(squat)
    tdir = None
    try:
        with d:
            d.wait_ready()  # the extraction appliance too: its overlays are in the state dir
            pool = d.get("/v1/pool")
            print("guest memory:", pool["guest_memory"], "-", pool["guest_memory_reason"])
            assert pool["guest_memory"] == "template", pool["guest_memory_reason"]
            log = d.tail_log(100000)
            refused = [line for line in log.splitlines()
                       if f"{squat}: the folder (a folder, mode 0777) is owned by uid {NOBODY}"
                       in line and "refused" in line]
            assert refused, f"no log line refusing {squat}"
            print("log:", refused[0])
            m = re.search(r"template: one per image and shape in (\S+) \(", log)
            assert m, "the log does not say where the templates are"
            tdir = m.group(1)
            assert tdir.startswith(squat + "-"), f"templates in {tdir}, not {squat}-<random>"
            check_squat_untouched(squat)
            st = os.lstat(tdir)
            assert st.st_uid == 0 and st.st_mode & 0o7777 == 0o711, \
                f"{tdir}: uid {st.st_uid} mode {st.st_mode & 0o7777:04o}"
            files = sorted(os.listdir(tdir))
            print(f"{tdir}: {files}")
            assert "minimal.mem" in files and "minimal.state" in files, files

            ours = tree(tdir) + tree(state_dir)
            above = sorted(set(parents(tdir) + parents(state_dir)))
            bad = check_modes(ours, above=False) + check_modes(above, above=True)
            assert not bad, "\n".join(bad)
            done = as_nobody(ours + above)
            # Listing a folder above ours (/, /tmp, /dev/shm) or creating in a sticky one is
            # not a leak: what matters is that nothing of ours can be reached from there.
            leaks = [f"{how} {p}" for how, p in done
                     if not (how in ("list", "create in") and p in above)
                     and not (how == "read" and any(r.search(p) for r in PUBLIC_READ))]
            print(f"as uid {NOBODY}: {len(ours) + len(above)} paths tried (the appliance's: "
                  f"{[p for p in ours if 'libguestfs' in p]}), did {done}")
            assert not leaks, f"uid {NOBODY} could: " + "; ".join(leaks)
        assert not os.path.exists(tdir), f"{tdir} is left after a clean stop"
        check_squat_untouched(squat)
    finally:
        shutil.rmtree(squat, ignore_errors=True)
        if tdir:
            shutil.rmtree(tdir, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
