#!/usr/bin/python3
# SPDX-License-Identifier: MIT
#
# Test helper: turns a Chrome-trace JSON file (optionally .gz; an object with traceEvents or a bare
# array, as Kineto, legacy torch, Paddle and MindSpore write them) into the flat TSV that
# test_analyse_ops reads, so the C test needs no JSON parser. One line per complete ("X") event:
#   ts_ns  dur_ns  pid  tid  cat  name  correlation  external_id
# ts/dur are converted from microseconds exactly (via the printed decimal text); string pids and
# tids get stable negative ids in order of appearance; tabs and newlines in names become spaces;
# correlation / external_id are -1 when absent. Writes to stdout.
import gzip
import json
import sys
from decimal import Decimal


def us_to_ns(v):
    return int(Decimal(str(v)) * 1000)


def main():
    path = sys.argv[1]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f, parse_float=Decimal)
    events = data["traceEvents"] if isinstance(data, dict) else data
    ids = {}

    def num(v):
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return v
        try:
            return int(v)
        except (TypeError, ValueError):
            return ids.setdefault(v, -1 - len(ids))

    out = sys.stdout
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        args = e.get("args") or {}
        corr = args.get("correlation", -1)
        ext = args.get("External id", args.get("external id", -1))
        name = str(e.get("name", "")).replace("\t", " ").replace("\n", " ")
        cat = str(e.get("cat", "")).replace("\t", " ")
        out.write("%d\t%d\t%d\t%d\t%s\t%s\t%d\t%d\n" % (
            us_to_ns(e["ts"]), us_to_ns(e["dur"]), num(e.get("pid", 0)), num(e.get("tid", 0)),
            cat, name, num(corr), num(ext)))


if __name__ == "__main__":
    main()
