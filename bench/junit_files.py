"""Per-file test time from the JUnit XML that ``SCANPROBE_JUNIT_DIR=DIR bash scripts/test`` writes.

Usage: python3 bench/junit_files.py DIR/<leg>.xml [...]   (one column per file given)
Worker-seconds per test file (set-up, call and teardown summed over its tests; with two
workers a leg's wall time is about half the column's total), with the count of tests run and
skipped, largest first.
"""
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def per_file(path):
    secs, ran, skipped = defaultdict(float), defaultdict(int), defaultdict(int)
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("classname", "").split(".")[-1] or "?"
        secs[name] += float(case.get("time") or 0)
        if case.find("skipped") is not None:
            skipped[name] += 1
        else:
            ran[name] += 1
    return secs, ran, skipped


def main(paths):
    cols = [(p.rsplit("/", 1)[-1].removesuffix(".xml"), *per_file(p)) for p in paths]
    names = sorted({n for _, s, _, _ in cols for n in s}, key=lambda n: -sum(c[1].get(n, 0) for c in cols))

    def cell(secs, ran, skipped):
        return f"{secs:8.1f} s {ran:4d} ran {skipped:3d} sk".rjust(26)

    print(f"{'file':24}" + "".join(f"{leg[:24]:>26}" for leg, *_ in cols))
    for n in names:
        print(f"{n:24}" + "".join(cell(s.get(n, 0), r.get(n, 0), k.get(n, 0)) for _, s, r, k in cols))
    print(f"{'total':24}" + "".join(cell(sum(s.values()), sum(r.values()), sum(k.values()))
                                    for _, s, r, k in cols))


if __name__ == "__main__":
    main(sys.argv[1:] or sys.exit(__doc__))
