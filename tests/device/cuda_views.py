#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Records, on a GPU machine, the real inputs of the HTA / tb-profiler views (issue 17): GPU time
and idle, compute/communication/memcpy overlap on two streams, launch delays, the CUDA queue,
memory over time and per operator, and two runs of one model that differ (for the diff view).
Needs only torch with CUDA; no daemon, no stepscope build, no network (tests/device/README.md).

    cuda_views.py OUTDIR [--cpu] [--steps N]

Two runs (a: batch 16, b: batch 32 with one more layer) of a small CNN, each under a
torch.profiler window (schedule wait=1, warmup=1, active=N, default 5) with record_shapes,
profile_memory, with_stack and with_modules on. Each iteration copies its next batch from pinned
host memory on a side stream (non_blocking, waited on by an event) while the default stream
computes, and reads the loss back with .item() every other step (a host sync, so the GPU idles
while the host waits). Writes into OUTDIR (at most 8 files):

    trace_a.json.gz, trace_b.json.gz   torch's own Kineto exports of the two windows
    tables.json    per run: prof.key_averages() (name, count, device type, cpu/cuda self and
                   total µs, cpu/cuda self and total memory bytes, calls), grouped by input
                   shape, and grouped by the top 5 stack frames
    memory.json    per run: torch.cuda.memory_stats() after each profiled step, the peak
                   (max_memory_allocated / reserved), and prof.export_memory_timeline's
                   categories where this torch has it
    meta.json      versions, device, schedule, batch sizes, per-step wall-clock bounds
    log.txt        what this script printed

Exits non-zero when a run fails.
"""
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

LOG = []


def log(*a):
    s = " ".join(str(x) for x in a)
    LOG.append(s)
    print(s, flush=True)


def rows_of(avgs):
    out = []
    for a in avgs:
        def g(*names, default=0):
            for n in names:
                v = getattr(a, n, None)
                if v is not None:
                    return v
            return default
        dev = getattr(a, "device_type", None)
        out.append({
            "name": a.key, "count": a.count,
            "device_type": str(dev).split(".")[-1] if dev is not None else None,
            "input_shapes": str(getattr(a, "input_shapes", "") or ""),
            "stack": list(getattr(a, "stack", []) or [])[:5],
            "self_cpu_us": a.self_cpu_time_total, "cpu_total_us": a.cpu_time_total,
            "self_cuda_us": g("self_device_time_total", "self_cuda_time_total"),
            "cuda_total_us": g("device_time_total", "cuda_time_total"),
            "self_cpu_memory_bytes": g("self_cpu_memory_usage"),
            "cpu_memory_bytes": g("cpu_memory_usage"),
            "self_cuda_memory_bytes": g("self_device_memory_usage", "self_cuda_memory_usage"),
            "cuda_memory_bytes": g("device_memory_usage", "cuda_memory_usage"),
        })
    return out


def one_run(torch, name, outdir, cuda, batch, extra_layer, steps):
    nn = torch.nn
    dev = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    layers = [nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU()]
    if extra_layer:
        layers += [nn.Conv2d(32, 32, 3, padding=1), nn.ReLU()]
    layers += [nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(32 * 16, 10)]
    model = nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    n_iter = steps + 2 + 2  # wait 1 + warmup 1 + active + 2 after the window
    host = [(torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))) for _ in range(n_iter + 1)]
    if cuda:
        host = [(x.pin_memory(), y.pin_memory()) for x, y in host]
        side = torch.cuda.Stream()
    tmp = tempfile.mkdtemp(prefix="cuda-views-")
    exported = []

    def on_ready(prof):
        p = os.path.join(tmp, "trace_%s.json" % name)
        prof.export_chrome_trace(p)
        exported.append(p)

    acts = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    sched = torch.profiler.schedule(wait=1, warmup=1, active=steps, repeat=1)
    mem_steps, bounds = [], []

    def to_dev(i):
        x, y = host[i]
        if not cuda:
            return x, y, None
        with torch.cuda.stream(side):
            xd = x.to(dev, non_blocking=True)
            yd = y.to(dev, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(side)
        return xd, yd, ev

    with torch.profiler.profile(activities=acts, schedule=sched, on_trace_ready=on_ready,
                                record_shapes=True, profile_memory=True, with_stack=True,
                                with_modules=True) as prof:
        nxt = to_dev(0)
        for i in range(n_iter):
            t0 = time.time_ns()
            xd, yd, ev = nxt
            if ev is not None:
                torch.cuda.current_stream().wait_event(ev)
                xd.record_stream(torch.cuda.current_stream())
                yd.record_stream(torch.cuda.current_stream())
            nxt = to_dev(i + 1)  # the next batch's copy overlaps this step's compute
            with torch.profiler.record_function("forward"):
                out = model(xd)
                loss = loss_fn(out, yd)
            with torch.profiler.record_function("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with torch.profiler.record_function("optimizer"):
                opt.step()
            if i % 2 == 0:
                loss.item()  # a host sync: the device idles while the host waits
            if cuda:
                mem_steps.append({"iteration": i, "step_num": prof.step_num,
                                  "stats": {k: v for k, v in torch.cuda.memory_stats().items()
                                            if k.endswith((".all.current", ".all.peak"))}})
            bounds.append({"iteration": i, "step_num": prof.step_num, "start_ns": t0,
                           "end_ns": time.time_ns()})
            prof.step()
        if cuda:
            torch.cuda.synchronize()
    if not exported:
        raise RuntimeError("the profiler window was never exported")
    with open(exported[-1], "rb") as f, gzip.open(os.path.join(outdir, "trace_%s.json.gz" % name), "wb") as g:
        shutil.copyfileobj(f, g)
    tables = {"key_averages": rows_of(prof.key_averages())}
    try:
        tables["by_input_shape"] = rows_of(prof.key_averages(group_by_input_shape=True))
    except Exception as e:  # noqa: BLE001 (recorded, not fatal)
        tables["by_input_shape_error"] = repr(e)
    try:
        tables["by_stack_5"] = rows_of(prof.key_averages(group_by_stack_n=5))
    except Exception as e:  # noqa: BLE001
        tables["by_stack_5_error"] = repr(e)
    memory = {"per_step": mem_steps}
    if cuda:
        memory["max_memory_allocated"] = torch.cuda.max_memory_allocated()
        memory["max_memory_reserved"] = torch.cuda.max_memory_reserved()
        try:
            p = os.path.join(tmp, "mem_%s.raw.json.gz" % name)
            prof.export_memory_timeline(p, device="cuda:0")
            with gzip.open(p, "rt") as f:
                memory["memory_timeline_raw"] = json.load(f)
        except Exception as e:  # noqa: BLE001
            memory["memory_timeline_error"] = repr(e)
    shutil.rmtree(tmp, ignore_errors=True)
    log("run", name, "batch", batch, "extra_layer", extra_layer, "iterations", n_iter,
        "key_averages rows", len(tables["key_averages"]))
    return tables, memory, bounds


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    outdir = args[0]
    cpu = "--cpu" in args
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 5
    os.makedirs(outdir, exist_ok=True)
    import torch
    cuda = not cpu and torch.cuda.is_available()
    if not cpu and not cuda:
        sys.exit("no CUDA device (use --cpu to try the script here)")
    meta = {"torch": torch.__version__, "cuda": getattr(torch.version, "cuda", None),
            "device": torch.cuda.get_device_name(0) if cuda else "cpu",
            "schedule": {"wait": 1, "warmup": 1, "active": steps, "repeat": 1},
            "runs": {"a": {"batch": 16, "extra_layer": False},
                     "b": {"batch": 32, "extra_layer": True}},
            "python": sys.version.split()[0]}
    log("torch", meta["torch"], "cuda", meta["cuda"], "device", meta["device"])
    tables, memory, rc = {}, {}, 0
    for name, cfg in meta["runs"].items():
        try:
            t, m, b = one_run(torch, name, outdir, cuda, cfg["batch"], cfg["extra_layer"], steps)
            tables[name], memory[name] = t, m
            meta["runs"][name]["bounds"] = b
        except Exception:  # noqa: BLE001 (the other run still records)
            log("run", name, "failed:", traceback.format_exc())
            rc = 1
    for fname, obj in (("tables.json", tables), ("memory.json", memory), ("meta.json", meta)):
        with open(os.path.join(outdir, fname), "w") as f:
            json.dump(obj, f, indent=1, default=str)
    with open(os.path.join(outdir, "log.txt"), "w") as f:
        f.write("\n".join(LOG) + "\n")
    sys.exit(rc)


if __name__ == "__main__":
    main()
