#!/usr/bin/env python3
"""The module rules of hostd/README.md, enforced: every `#include "..."` in hostd/<module>/
names a header of the module itself or of a module its row in the README's table says it
"may use"; a header named *_internal.h is used only inside its own directory. proto/ (the
wire contract) is below every module that talks to a guest: it counts as a module of its
own, allowed where the table lists it. A "may use" entry whose note names headers in
backticks ("pool (`pool_status.h`: ...)") allows only those headers of that module.
hostd/*.c (main, daemon, config) wire everything and are not checked. Prints every violation with file:line and exits 1 if there is any.

    check_includes.py <repo root>
"""
import os
import re
import sys

ROW = re.compile(r"^\| `(\w+)/` \| .* \| ([^|]+) \|$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Headers with another owner than their directory: proto's generated code belongs to proto.
ALIASES = {"runner.pb-c.h": "proto"}


def entries(col):
    """"a, b (x, y), c" -> ["a", "b (x, y)", "c"]: commas inside parentheses do not split."""
    out, depth, cur = [], 0, ""
    for ch in col:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()] if cur.strip() else out


def table(readme):
    """{module: {module it may use: None (every header) or the set of headers allowed}}."""
    allowed = {}
    with open(readme) as f:
        for line in f:
            m = ROW.match(line.strip())
            if not m:
                continue
            uses = {}
            for entry in entries(m.group(2)):
                name = entry.split("(")[0].strip()
                note = entry[len(name):]
                headers = set(re.findall(r"`([\w.]+\.h)`", note))
                if name:
                    uses[name] = headers or None
            allowed[m.group(1)] = uses
    return allowed


def owners(root):
    """{header file name: owning module} for hostd/<module>/*.h and proto/*.h."""
    own = dict(ALIASES)
    hostd = os.path.join(root, "hostd")
    for mod in sorted(os.listdir(hostd)):
        d = os.path.join(hostd, mod)
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if name.endswith(".h"):
                own[name] = mod
    for name in os.listdir(os.path.join(root, "proto")):
        if name.endswith(".h"):
            own[name] = "proto"
    return own


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    allowed = table(os.path.join(root, "hostd", "README.md"))
    own = owners(root)
    problems = []
    hostd = os.path.join(root, "hostd")
    for mod in sorted(allowed):
        d = os.path.join(hostd, mod)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            me = mod
            path = os.path.join(d, name)
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    hdr = os.path.basename(m.group(1))
                    owner = own.get(hdr)
                    where = f"hostd/{mod}/{name}:{n}"
                    if owner is None:
                        problems.append(f"{where}: \"{hdr}\" belongs to no module")
                    elif hdr.endswith("_internal.h") and owner != me:
                        problems.append(f"{where}: \"{hdr}\" is internal to {owner}")
                    elif owner != me and owner not in allowed.get(me, {}):
                        problems.append(f"{where}: {me} may not use {owner} (\"{hdr}\"); "
                                        f"hostd/README.md allows {sorted(allowed.get(me, {}))}")
                    elif owner != me and allowed[me][owner] is not None and \
                            hdr not in allowed[me][owner]:
                        problems.append(f"{where}: {me} may use only "
                                        f"{sorted(allowed[me][owner])} of {owner}, not \"{hdr}\"")
    for p in problems:
        print(p)
    print(f"{len(problems)} include(s) against hostd/README.md's module table")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
