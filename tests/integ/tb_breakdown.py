# SPDX-License-Identifier: MIT
"""An independent reference of torch-tb-profiler's step-time breakdown and GPU utilisation
(../shared/reference/peers.md §1.3 and §1.5), written from that description in plain Python over
the raw Chrome-trace events, for the golden tests. It shares nothing with daemon/analyse.

Times are integer nanoseconds, converted exactly from the trace's decimal microseconds (the
daemon does the same), so every per-step figure can be compared exactly.

Where stepscope deliberately departs from tb-plugin (docs/ANALYSIS.md, "Where we differ"), the
reference follows tb-plugin unless the switch below says otherwise, and reports which departures
the trace exercised, so a test can tell "equal to tb-plugin" from "equal to tb-plugin with a
documented departure".
"""
import functools
import gzip
import json
from decimal import Decimal

TB_COMM_NAMES = {p + op for p in ("nccl:", "gloo:")
                 for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")}
CATS = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec",
        "other")


def load(path):
    """The trace's event list, numbers as Decimal."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def lines(path):
    """The trace's events as NDJSON lines, every number written exactly as in the file (a new
    list each call: the tests read the same traces many times, parsed once)."""
    return list(_lines(str(path)))


@functools.lru_cache(maxsize=8)
def _lines(path):
    import re
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=lambda t: "\x00" + t + "\x00")
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    num = re.compile(r'"\\u0000([-+.0-9eE]+)\\u0000"')
    return tuple(num.sub(r"\1", json.dumps(e, separators=(",", ":"))) for e in evs)


def ns(us):
    return int(Decimal(us) * 1000)


def merge(ranges):
    out = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [tuple(r) for r in out]


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a, b):
    """a minus b, both merged and sorted."""
    out, j = [], 0
    for s, e in a:
        while j < len(b) and b[j][1] <= s:
            j += 1
        k = j
        while s < e and k < len(b) and b[k][0] < e:
            if b[k][0] > s:
                out.append((s, b[k][0]))
            s = max(s, b[k][1])
            k += 1
        if s < e:
            out.append((s, e))
    return out


def covered(ranges, s, e):
    return sum(max(0, min(e, re_) - max(s, rs)) for rs, re_ in ranges)


def breakdown(events, comm_prefix=False, driver=False):
    """comm_prefix: stepscope's documented departure, any "nccl:"/"gloo:" host op is
    communication (tb-plugin knows five collectives by name).
    driver: stepscope's documented departure, a cat `cuda_driver` call (cuLaunchKernel, which
    Kineto records when a library launches through the driver API) is a runtime call that owns
    the device events with its correlation (tb-plugin has no type for the cat and drops it).
    {"steps": [{"step", "start", "end", "costs": {cat: ns}}], "dropped", "average": {cat:
    float ns, "total": float ns}, "gpus": {device: utilisation}, "departures": set()}."""
    departures = set()
    role_ranges = {c: [] for c in CATS[:-1]}
    steps, runtimes, devices, comm_ext = [], [], [], set()
    cpu_min, cpu_max = None, None
    host = []
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        cat = str(e.get("cat", "")).lower()
        name = e.get("name", "")
        s = ns(e["ts"])
        t = s + ns(e["dur"])
        args = e.get("args") or {}
        if cat == "kernel":
            devices.append(("kernel", s, t, args.get("correlation"), args.get("External id"),
                            args.get("device", e.get("pid"))))
        elif cat in ("memcpy", "gpu_memcpy"):
            devices.append(("memcpy", s, t, args.get("correlation"), None, None))
        elif cat in ("memset", "gpu_memset"):
            devices.append(("memset", s, t, args.get("correlation"), None, None))
        elif cat in ("runtime", "cuda_runtime") or (driver and cat == "cuda_driver"):
            role_ranges["runtime"].append((s, t))
            runtimes.append((s, t, args.get("correlation")))
        elif cat == "cuda_driver":
            departures.add("cuda_driver")
        elif cat in ("operator", "cpu_op", "user_annotation", "python", "gpu_user_annotation"):
            if cat == "gpu_user_annotation":
                # tb-plugin would take a mirrored "ProfilerStep#N" here as another step; we
                # classify it as a user annotation (docs/ANALYSIS.md).
                departures.add("gpu_user_annotation")
            if cat in ("operator", "cpu_op", "python"):
                cpu_min = s if cpu_min is None else min(cpu_min, s)
                cpu_max = t if cpu_max is None else max(cpu_max, t)
            if name.startswith("ProfilerStep#") and cat != "gpu_user_annotation":
                steps.append((s, t, int(name.split("#")[1])))
                cpu_min = s if cpu_min is None else min(cpu_min, s)
                cpu_max = t if cpu_max is None else max(cpu_max, t)
            elif ((name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__"))
                  or name.startswith("enumerate(DataPipe)#")):
                role_ranges["dataloader"].append((s, t))
            elif name in TB_COMM_NAMES or (comm_prefix and name.startswith(("nccl:", "gloo:"))):
                role_ranges["communication"].append((s, t))
                if args.get("External id") is not None:
                    comm_ext.add(args["External id"])
            else:
                if name.startswith(("nccl:", "gloo:")):
                    departures.add("communication_names")
                role_ranges["cpu_exec"].append((s, t))
            host.append((s, t))
    for kind, s, t, corr, ext, dev in devices:
        if kind == "kernel" and ext is not None and ext in comm_ext:
            role_ranges["communication"].append((s, t))
        else:
            role_ranges[kind].append((s, t))

    steps.sort()
    if not steps:
        if cpu_min is None:
            return {"steps": [], "dropped": 0, "average": None, "gpus": {},
                    "departures": departures}
        steps = [(cpu_min, cpu_max, 0)]
    # Device events hang off the last runtime call with their correlation.
    by_corr = {}
    for r in runtimes:
        if r[2] is not None:
            by_corr[r[2]] = r
    launched = {}  # runtime -> [device events]
    for d in devices:
        r = by_corr.get(d[3])
        if r is not None:
            launched.setdefault(r, []).append(d)
    inside = set()
    step_dev = []
    for hs, he, _ in steps:
        evs = []
        for r, ds in launched.items():
            if r[0] >= hs and r[1] <= he:
                evs += ds
                inside.add(r)
        step_dev.append(evs)
    out = [{"step": n, "host_start": hs, "host_end": he, "start": hs, "end": he,
            "n_device": len(step_dev[k])} for k, (hs, he, n) in enumerate(steps)]
    dropped = 0
    if any(step_dev):
        prev = steps[0][0]
        if step_dev[0]:
            first = min(d[1] for d in step_dev[0])
            for d in devices:
                r = by_corr.get(d[3])
                if r is not None and r in inside:
                    continue
                if d[2] < first and d[2] > prev:
                    prev = d[2]
        for k, st in enumerate(out):
            s = max(prev, st["host_start"])
            if step_dev[k]:
                e = max(st["host_end"], max(d[2] for d in step_dev[k]), s)
            else:
                e = max(st["host_end"], s)
            st["start"], st["end"] = s, e
            prev = e
        if len(out) > 1:
            last = max(k for k in range(len(out)) if out[k]["n_device"] > 0)
            keep = last + 1
            if last > 0 and out[last - 1]["n_device"] * 0.8 > out[last]["n_device"]:
                keep = last
            dropped = len(out) - keep
            out = out[:keep]

    slots = merge([(st["start"], st["end"]) for st in out])
    cost = {}
    for c in CATS[:-1]:
        got = intersect(slots, merge(role_ranges[c]))
        cost[c] = got
        slots = subtract(slots, got)
    cost["other"] = slots
    for st in out:
        st["costs"] = {c: covered(cost[c], st["start"], st["end"]) for c in CATS}
    n = len(out)
    average = None
    if n:
        average = {c: sum(st["costs"][c] for st in out) / n for c in CATS}
        average["total"] = sum(st["end"] - st["start"] for st in out) / n
    gpus = {}
    if n:
        w0, w1 = out[0]["start"], out[-1]["end"]
        per = {}
        for kind, s, t, corr, ext, dev in devices:
            if kind == "kernel":
                per.setdefault(int(dev), []).append((s, t))
        for dev, ks in per.items():
            gpus[dev] = covered(merge(ks), w0, w1) / (w1 - w0) if w1 > w0 else 0.0
    return {"steps": out, "dropped": dropped, "average": average, "gpus": gpus,
            "departures": departures}
