#!/usr/bin/env python3
"""The link closures tests/lint/link_closure.cmake wrote at configure time (one library or
target per line: everything the target ends up linking), checked against a pattern of
libraries it may not link. A pure parser that links libvirt, libpq or libguestfs does so
because a CMake link somewhere pulls in a module it should not. Prints each offender with
what it links that it may not, and exits 1 if there is any.

    check_links.py <regex of forbidden libraries, case-insensitive> <file.links>...
"""
import os
import re
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    forbidden = re.compile(sys.argv[1], re.IGNORECASE)
    bad = 0
    for path in sys.argv[2:]:
        with open(path) as f:
            libs = [line.strip() for line in f if line.strip()]
        target = os.path.basename(path).removesuffix(".links")
        hits = [lib for lib in libs if forbidden.search(lib)]
        if not libs:
            bad += 1
            print(f"{target}: an empty closure (it links at least stockade_base): not written?")
        elif hits:
            bad += 1
            print(f"{target}: links {', '.join(hits)}")
    print(f"{len(sys.argv) - 2} target(s) checked against /{sys.argv[1]}/, {bad} link what they "
          "may not")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
