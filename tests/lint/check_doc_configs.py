#!/usr/bin/env python3
"""Every configuration block the documentation shows parses, and means what it says.

A block is a fenced code block marked ```ini in any Markdown file of the repository (README.md,
every module's README, docs/, API.md). (The shipped tools/stockaded.conf is golden_cli_docs's:
every key listed, and accepted uncommented.) Each is written to a file and given to
`stockaded --check-config -c FILE`, which must accept it. Then every `key = value` line of the
block is looked up in the effective configuration the daemon printed: the value there must be
the block's value with its comment removed (a value that carries a unit, "10s", is compared
after the daemon's conversion, by a second parse of the printed line). So a comment read as
part of a value, or a value the daemon silently changes, fails here (issue 30: the README's own
[cluster] example did not parse: "lease_s must be a number").

Documentation that shows a configuration must mark its block ```ini, so this test reads it.

    check_doc_configs.py <repo root> <stockaded binary>
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```ini\s*$")
SECTION = re.compile(r"^\[([^\]]+)\]")
SETTING = re.compile(r"^([A-Za-z0-9_]+)\s*=\s*(.*)$")
COMMENT = re.compile(r"\s[#;].*$")


def blocks(root):
    """(path, first line number, text) of every ```ini block under root."""
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for name in sorted(files):
            if not name.endswith(".md"):
                continue
            path = os.path.join(top, name)
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
            i = 0
            while i < len(lines):
                if FENCE.match(lines[i]):
                    j = i + 1
                    while j < len(lines) and not lines[j].startswith("```"):
                        j += 1
                    yield os.path.relpath(path, root), i + 2, "\n".join(lines[i + 1:j]) + "\n"
                    i = j
                i += 1


def settings(text):
    """{(section, key): value without its comment} of a config text."""
    out, section = {}, None
    for line in text.split("\n"):
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        m = SECTION.match(s)
        if m:
            section = m.group(1).strip()
            continue
        m = SETTING.match(s)
        if m and section:
            out[(section, m.group(1))] = COMMENT.sub("", m.group(2)).strip()
    return out


def check(stockaded, text, scratch):
    """The problems of one block ([] when it parses and every value stands as written)."""
    conf = os.path.join(scratch, "block.conf")
    with open(conf, "w") as f:
        f.write(text)
    # A state directory of its own: --check-config writes nothing, but the path must be absolute.
    run = subprocess.run([stockaded, "--check-config", "-c", conf, "-s", scratch],
                         capture_output=True, text=True, timeout=30)
    if run.returncode != 0:
        return [f"refused: {run.stderr.strip()}"]
    effective = settings(run.stdout)
    problems = []
    for (section, key), value in settings(text).items():
        got = effective.get((section, key))
        if got is None:
            problems.append(f"[{section}] {key}: not in the effective configuration")
        elif got != value and not same_quantity(stockaded, section, key, value, got, scratch):
            problems.append(f"[{section}] {key}: written '{value}', the daemon has '{got}'")
    return problems


def same_quantity(stockaded, section, key, written, effective, scratch):
    """True when `written` (e.g. "10s") is the same setting as the daemon's plain `effective`
    ("10"): the daemon prints both back the same way."""
    printed = []
    for value in (written, effective):
        conf = os.path.join(scratch, "one.conf")
        with open(conf, "w") as f:
            f.write(f"[{section}]\n{key} = {value}\n")
        run = subprocess.run([stockaded, "--check-config", "-c", conf, "-s", scratch],
                             capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            return False
        printed.append(settings(run.stdout).get((section, key)))
    return printed[0] == printed[1]


def main():
    root, stockaded = sys.argv[1], sys.argv[2]
    failed = 0
    seen = 0
    with tempfile.TemporaryDirectory() as scratch:
        for path, line, text in blocks(root):
            seen += 1
            problems = check(stockaded, text, scratch)
            for p in problems:
                print(f"{path}:{line}: {p}")
            failed += bool(problems)
            if not problems:
                print(f"{path}:{line}: ok ({len(settings(text))} settings)")
    print(f"{seen} documented configuration block(s), {failed} with problems")
    if seen == 0:
        print("no ```ini block found: the documentation shows configurations in ```ini blocks")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
