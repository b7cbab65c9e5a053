#!/usr/bin/env python3
"""How tangled hostd/ is, in numbers (issue 17; not a test: it prints, it does not judge).

  module graph   which module includes a header of which (hostd/<module>/, proto/; api/'s
                 http*.{c,h} count as the module "http")
  sessions/      the calls between its .c files (a function defined in one and called in
                 another, comments and strings stripped), and the pairs of files that call
                 each other

    module_graph.py [repo root]          e.g. in a worktree of an older commit, to compare
"""
import collections
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
DEFINITION = re.compile(r"^(\w+)\([^;{]*\)\s*\{", re.M | re.S)


def module_of(directory, name):
    return "http" if directory == "api" and name.startswith("http") else directory


def module_graph(root):
    hostd = os.path.join(root, "hostd")
    mods = [m for m in sorted(os.listdir(hostd)) if os.path.isdir(os.path.join(hostd, m))]
    owner = {"runner.pb-c.h": "proto"}
    for m in mods:
        for n in os.listdir(os.path.join(hostd, m)):
            if n.endswith(".h"):
                owner[n] = module_of(m, n)
    for n in os.listdir(os.path.join(root, "proto")):
        if n.endswith(".h"):
            owner[n] = "proto"
    graph = collections.defaultdict(set)
    for m in mods:
        for n in sorted(os.listdir(os.path.join(hostd, m))):
            if not n.endswith((".c", ".h")):
                continue
            with open(os.path.join(hostd, m, n)) as f:
                for line in f:
                    x = INCLUDE.match(line)
                    o = owner.get(os.path.basename(x.group(1))) if x else None
                    if o and o != module_of(m, n):
                        graph[module_of(m, n)].add(o)
    return graph


def code(path):
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
    return re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)


def sessions_calls(root):
    sd = os.path.join(root, "hostd", "sessions")
    files = [f for f in sorted(os.listdir(sd)) if f.endswith(".c")]
    src = {f: code(os.path.join(sd, f)) for f in files}
    defined = {}
    for f in files:
        for m in DEFINITION.finditer(src[f]):
            defined.setdefault(m.group(1), f)
    calls = collections.defaultdict(set)
    for f in files:
        for name, where in defined.items():
            if where != f and re.search(r"\b" + name + r"\(", src[f]):
                calls[f].add(where)
    return files, calls


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    graph = module_graph(root)
    print("module graph (who includes whom):")
    for m in sorted(graph):
        print(f"  {m} -> {', '.join(sorted(graph[m]))}")
    print(f"  {sum(len(v) for v in graph.values())} edges")
    files, calls = sessions_calls(root)
    mutual = sorted({tuple(sorted((a, b))) for a in calls for b in calls[a]
                     if a in calls.get(b, set())})
    print(f"sessions/: {len(files)} .c files, {sum(len(v) for v in calls.values())} call "
          f"arrows between them, {len(mutual)} pairs that call each other")
    for a, b in mutual:
        print(f"  {a} <-> {b}")


if __name__ == "__main__":
    main()
