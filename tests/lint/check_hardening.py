#!/usr/bin/env python3
"""docs/hardening.md against the build (issue 31: a doc and its test say the same thing):
  - its table of fuzz targets lists exactly the targets tests/fuzz registers;
  - every figure it and the root README give for how long CI fuzzes each target is
    STOCKADE_FUZZ_SECONDS's default (tests/fuzz/CMakeLists.txt; a tree configured with
    another value for a long run still passes), and .ci/run sets no figure of its own;
  - its Sanitizers section names the exact `-R` pattern .ci/run's sanitized real-guest stage
    runs.
Prints each disagreement and exits 1 if there is any.

    check_hardening.py <hardening.md> <README.md> <.ci/run> <tests/fuzz/CMakeLists.txt> <fuzz target>...
"""
import re
import sys


def section(text, heading):
    """The lines from heading to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    out, inside = [], False
    for line in text.splitlines():
        m = re.match(r"^(#+) ", line)
        if inside and m and len(m.group(1)) <= level:
            break
        if line.startswith(heading):
            inside = True
        elif inside:
            out.append(line)
    return "\n".join(out)


def main():
    if len(sys.argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    hardening, readme, ci, fuzz_cmake = (open(p).read() for p in sys.argv[1:5])
    targets = set(sys.argv[5:])
    problems = []
    m = re.search(r"set\(STOCKADE_FUZZ_SECONDS (\d+) CACHE", fuzz_cmake)
    if not m:
        print("tests/fuzz/CMakeLists.txt: no default for STOCKADE_FUZZ_SECONDS")
        return 1
    seconds = m.group(1)

    table = section(hardening, "### Fuzz targets")
    listed = set()
    for line in table.splitlines():
        cell = line.split("|")[1] if line.startswith("|") else ""
        listed |= set(re.findall(r"`(fuzz_\w+)`", cell))
    for t in sorted(targets - listed):
        problems.append(f"docs/hardening.md: the fuzz target table does not list {t}")
    for t in sorted(listed - targets):
        problems.append(f"docs/hardening.md: the fuzz target table lists {t}, which is not built")

    figures = [("docs/hardening.md", m) for m in re.findall(r"CI fuzzes each for (\d+) s", hardening)]
    figures += [("docs/hardening.md", m) for m in re.findall(r"every target (\d+) s", hardening)]
    figures += [("README.md", m) for m in re.findall(r"fuzzes every libFuzzer target for (\d+) s", readme)]
    if len(figures) < 3:
        problems.append("the fuzzing time is no longer stated where this check looks "
                        "(docs/hardening.md twice, README.md once): update the check")
    for where, n in figures:
        if n != seconds:
            problems.append(f"{where} says each target fuzzes {n} s; the build's default is "
                            f"{seconds}")
    if re.search(r"STOCKADE_FUZZ_SECONDS:?=\d", ci):
        problems.append(".ci/run sets a fuzzing time of its own: it must use the build's")

    asan = re.findall(r"ctest --test-dir build-asan[^\n]*\n?\s*-R '([^']+)'", ci)
    if len(asan) != 1:
        problems.append(".ci/run: expected one sanitized real-guest ctest -R line")
    elif f"-R '{asan[0]}'" not in section(hardening, "## Sanitizers"):
        problems.append(f"docs/hardening.md, Sanitizers: does not name .ci/run's -R '{asan[0]}'")

    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
