#!/usr/bin/env python3
"""Adds up test results: meson's testlog.json files (a libcheck binary counts each of its checks,
from its "Checks: N, Failures: F, Errors: E" line; any other test counts once) and pytest JUnit
XML files. Prints one line per source and returns the totals as 'passed failed'."""
import json
import re
import sys
import xml.etree.ElementTree as ET

CHECK = re.compile(r"Checks: (\d+), Failures: (\d+), Errors: (\d+)")


def meson(path):
    passed = failed = 0
    with open(path) as f:
        for line in f:
            t = json.loads(line)
            ok = t["result"] in ("OK", "EXPECTEDFAIL", "SKIP")
            m = CHECK.search(t.get("stdout") or "")
            if m:
                n, fl, er = map(int, m.groups())
                passed += n - fl - er
                failed += fl + er
                if not ok and fl + er == 0:
                    failed += 1  # crashed or leaked after its checks passed
            elif ok:
                passed += 1
            else:
                failed += 1
    return passed, failed


def junit(path):
    root = ET.parse(path).getroot()
    passed = failed = 0
    for tc in root.iter("testcase"):
        if tc.find("failure") is not None or tc.find("error") is not None:
            failed += 1
        elif tc.find("skipped") is None:
            passed += 1
    return passed, failed


def main(paths):
    total_p = total_f = 0
    for p in paths:
        try:
            p_, f_ = junit(p) if p.endswith(".xml") else meson(p)
        except (OSError, ValueError, ET.ParseError) as e:
            print(f"  {p}: unreadable ({e}): counted as 1 failure", file=sys.stderr)
            p_, f_ = 0, 1
        print(f"  {p}: {p_} passed, {f_} failed", file=sys.stderr)
        total_p += p_
        total_f += f_
    print(total_p, total_f)


if __name__ == "__main__":
    main(sys.argv[1:])
