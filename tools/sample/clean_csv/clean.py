#!/usr/bin/env python3
"""Clean a messy CSV of (name, city, amount) rows, with the standard library only.

    python3 clean.py data.csv [clean.csv]

Trims stray whitespace, skips empty lines, normalises case (names and cities in Title Case),
drops exact duplicates (after normalising), and drops rows whose amount is not a plain
decimal number. Prints what it did, one line per decision, and writes clean.csv.
"""
import csv
import re
import sys

AMOUNT = re.compile(r"^-?\d+(\.\d+)?$")  # plain decimals only: no "1e3", no "12,5"


def title(s):
    return " ".join(w.capitalize() for w in s.split())


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "data.csv"
    dst = sys.argv[2] if len(sys.argv) > 2 else "clean.csv"
    seen, kept, dropped = set(), [], 0
    with open(src, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = [h.strip().lower() for h in rows[0]], rows[1:]
    print(f"read {len(body)} rows from {src} (columns: {', '.join(header)})")
    for n, row in enumerate(body, start=2):
        if not row or all(not c.strip() for c in row):
            print(f"line {n}: empty, skipped")
            continue
        if len(row) != len(header):
            print(f"line {n}: {len(row)} fields instead of {len(header)}, dropped: {row}")
            dropped += 1
            continue
        fixes = ["trimmed whitespace"] if any(c != c.strip() for c in row) else []
        name, city, amount = (c.strip() for c in row)
        if not AMOUNT.match(amount):
            print(f"line {n}: amount {amount!r} is not a number, dropped")
            dropped += 1
            continue
        clean = (title(name), title(city), f"{float(amount):.2f}")
        if clean in seen:
            print(f"line {n}: duplicate of {clean[0]} / {clean[1]}, dropped")
            dropped += 1
            continue
        if list(clean[:2]) != [name, city]:
            fixes.append("fixed case")
        print(f"line {n}: kept {clean[0]} / {clean[1]} / {clean[2]}"
              + (f" ({', '.join(fixes)})" if fixes else ""))
        seen.add(clean)
        kept.append(clean)
    with open(dst, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(kept)
    print(f"wrote {len(kept)} rows to {dst} ({dropped} dropped)")


if __name__ == "__main__":
    main()
