#!/usr/bin/env python3
"""How tangled hostd/ is, in numbers (issue 17; not a test: it prints, it does not judge).

  module graph   which module includes a header of which (hostd/<module>/, proto/; api/'s
                 http*.{c,h} count as the module "http")
  sessions/      the calls between its .c files (a function defined in one and called in
                 another, comments and strings stripped), the pairs of files that call each
                 other, and the groups of files that call each other round a cycle
  structs        the largest structs defined in hostd/ headers (fields counted per declarator,
                 a nested struct or union as one), with the files that include their header
                 (hostd/ and tests/, directly)

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


def cycles(files, calls):
    """Groups of files that reach each other through calls (strongly connected, 2 or more)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(calls.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for f in files:
        if f not in index:
            visit(f)
    return out


STRUCT = re.compile(r"\bstruct\s+(\w+)\s*\{")


def fields(body):
    """Members of a struct body: one per declarator; a nested struct or union counts once."""
    n, depth, decl = 0, 0, ""
    for ch in body:
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth -= 1
        elif ch == ";" and depth == 0:
            if decl.strip():
                n += 1 if "(" in decl else decl.count(",") + 1
            decl = ""
            continue
        if depth == 0 or ch in "{(" and depth == 1:
            decl += ch if depth == 0 else ch
    return n


def structs(root):
    """[(fields, struct name, header, includers)] for every struct defined in a hostd header."""
    sources = []
    for top in ("hostd", "tests"):
        for d, _, names in os.walk(os.path.join(root, top)):
            sources += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
    text = {}
    for path in sources:
        with open(path, errors="replace") as f:
            text[path] = f.read()
    out = []
    for path in sources:
        if not path.endswith(".h") or os.sep + "hostd" + os.sep not in path:
            continue
        src = code(path)
        name = os.path.basename(path)
        users = sum(1 for p, t in text.items() if p != path and f'#include "{name}"' in t)
        for m in STRUCT.finditer(src):
            depth, i = 1, m.end()
            while depth and i < len(src):
                depth += {"{": 1, "}": -1}.get(src[i], 0)
                i += 1
            out.append((fields(src[m.end():i - 1]), m.group(1), name, users))
    return sorted(out, reverse=True)


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
    groups = cycles(files, calls)
    print(f"  {len(groups)} group(s) of files that call each other round a cycle"
          + "".join(f"\n    {len(g)}: {', '.join(g)}" for g in groups))
    print("largest structs in hostd/ headers (fields, struct, header, files including it):")
    all_structs = structs(root)
    for n, name, header, users in all_structs[:6]:
        print(f"  {n:3d}  {name} ({header}, {users} files)")
    sd = os.listdir(os.path.join(root, "hostd", "sessions"))
    print("  in sessions/ headers:")
    for n, name, header, users in [x for x in all_structs if x[2] in sd][:4]:
        print(f"  {n:3d}  {name} ({header}, {users} files)")


if __name__ == "__main__":
    main()
