# SPDX-License-Identifier: MIT
"""Writes a real-shaped Kineto trace: N copies of a real one, back to back in time.

gen_kineto.py's synthetic traces keep each thread's events nearly in start order, so the
importer never jumps around its spool; real multi-thread traces (tests/data/kineto/
gpu_5steps_rank0.json.gz: 13 threads and streams, each written in two or three runs of its own
far apart in the file) do. This keeps a real trace's layout exactly and makes it as large as
wanted: copy k has every ts shifted by k times the trace's span (plus 1 ms), ProfilerStep#N
renumbered after the previous copy's steps, and flow ids, External ids and correlations offset,
so that the copies are distinct steps, spans and flows. Times stay exact (read as decimals).

    python3 tile_kineto.py IN.json[.gz] OUT.json --copies N

Prints the number of events written.
"""
import argparse
import decimal
import gzip
import json
import re
import sys

MARK = "\x00D"


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=decimal.Decimal, parse_int=decimal.Decimal)


def plain(v):
    """Decimals as a marker string, to be unquoted after json.dumps (exact digits kept)."""
    if isinstance(v, decimal.Decimal):
        return MARK + str(v) + "\x00"
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def dumps(v):
    return re.sub(r'"\\u0000D([^"\\]+)\\u0000"', r"\1", json.dumps(plain(v), ensure_ascii=False))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--copies", type=int, default=4)
    a = ap.parse_args()
    doc = load(a.src)
    events = doc["traceEvents"]
    times = [(e["ts"], e.get("dur", 0)) for e in events if "ts" in e]
    t0 = min(t for t, _ in times)
    span = max(t + d for t, d in times) - t0 + 1000
    steps = [int(e["name"][13:]) for e in events
             if str(e.get("name", "")).startswith("ProfilerStep#")]
    step_span = (max(steps) - min(steps) + 1) if steps else 0
    ids = [int(e["id"]) for e in events if isinstance(e.get("id"), decimal.Decimal)]
    id_span = (max(ids) + 1) if ids else 0
    ext = [int(e["args"][k]) for e in events if isinstance(e.get("args"), dict)
           for k in ("External id", "correlation") if isinstance(e["args"].get(k), decimal.Decimal)]
    ext_span = (max(ext) + 1) if ext else 0
    head = {k: v for k, v in doc.items() if k != "traceEvents"}
    n = 0
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("{\n")
        for k, v in head.items():
            f.write("  %s: %s,\n" % (json.dumps(k), dumps(v)))
        f.write('  "traceEvents": [\n')
        first = True
        for c in range(a.copies):
            for e in events:
                if c:
                    e = dict(e)
                    if "ts" in e:
                        e["ts"] = e["ts"] + c * span
                    name = str(e.get("name", ""))
                    if name.startswith("ProfilerStep#"):
                        e["name"] = "ProfilerStep#%d" % (int(name[13:]) + c * step_span)
                    if isinstance(e.get("id"), decimal.Decimal):
                        e["id"] = e["id"] + c * id_span
                    if isinstance(e.get("args"), dict):
                        args = dict(e["args"])
                        for k in ("External id", "correlation"):
                            if isinstance(args.get(k), decimal.Decimal) and args[k] > 0:
                                args[k] = args[k] + c * ext_span
                        e["args"] = args
                f.write(("  " if first else ",\n  ") + dumps(e))
                first = False
                n += 1
        f.write("\n  ]\n}\n")
    print(n)


if __name__ == "__main__":
    sys.exit(main())
