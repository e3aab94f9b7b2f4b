#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The GPU half of the live torch path check (tests/device/README.md): needs only torch and the
stepscope package of this checkout (collectors/python, put on sys.path here); no daemon, no
network, nothing installed.

    cuda_attach.py OUTDIR [--cpu] [--steps N] [--memory]

Trains a small CNN for N iterations (default 12) under ``stepscope.torch.attach()`` and a
``torch.profiler`` window (schedule wait=1, warmup=1, active=4; activities CPU + CUDA, or CPU
only with --cpu; ``profile_memory=True`` with --memory, issue 17's device check), ``prof.step()`` each iteration, whose on_trace_ready is
``stepscope.torch.trace_handler()`` chained with saving the exported trace (the loop is
tests/frameworks/torch_train.py's profiled_loop). The collector sends to a recorder: the
Unix-socket stand-in for stepscoped of collectors/python/tests/fakeserver.py, which answers the
hello with a welcome and acknowledges lines as docs/PROTOCOL.md sections 1 and 3 require; every
line it took is written, as received, after the hello, to an NDJSON file. Writes into OUTDIR:

    records.ndjson      every line the collector sent, as received
    key_averages.json   torch's own prof.key_averages() of the window: name, count, device type,
                        cpu self/total and cuda self/total in µs
    trace.json.gz       the trace the handler exported and streamed (torch's own file, gzipped)
    meta.json           torch/CUDA versions, the device, each iteration's wall-clock bounds, the
                        profiler's step_num and the schedule's action, the collector's counters,
                        and torch.cuda.max_memory_allocated()/max_memory_reserved() after the loop
                        (with --memory the records also hold attach()'s allocator samples,
                        "[memory stats]" at each step's end, docs/PROTOCOL.md 10)
    log.txt             what this script printed

tests/device/check_cuda_attach.py OUTDIR replays them into a real daemon and checks them.
Exits non-zero when the training or the recording failed.
"""
import gzip
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "collectors", "python"))
sys.path.insert(0, os.path.join(ROOT, "collectors", "python", "tests"))  # fakeserver
sys.path.insert(0, os.path.join(ROOT, "tests", "frameworks"))            # torch_train

JOB = "cuda-attach"
BATCH = 16


def averages(prof):
    rows = []
    for a in prof.key_averages():
        dev = getattr(a, "device_type", None)
        cuda_self = getattr(a, "self_device_time_total", None)
        if cuda_self is None:
            cuda_self = getattr(a, "self_cuda_time_total", 0)
        cuda_total = getattr(a, "device_time_total", None)
        if cuda_total is None:
            cuda_total = getattr(a, "cuda_time_total", 0)
        rows.append({"name": a.key, "count": a.count,
                     "device_type": str(dev).split(".")[-1] if dev is not None else None,
                     "self_cpu_us": a.self_cpu_time_total, "cpu_total_us": a.cpu_time_total,
                     "self_cuda_us": cuda_self, "cuda_total_us": cuda_total})
    return rows


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    out = os.path.abspath(args[0])
    cpu = "--cpu" in args
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 12
    memory = "--memory" in args
    os.makedirs(out, exist_ok=True)
    log = open(os.path.join(out, "log.txt"), "w")

    def say(*a):
        s = " ".join(str(x) for x in a)
        print(s, flush=True)
        log.write(s + "\n")
        log.flush()

    import torch
    import torch.nn as nn

    import stepscope
    import stepscope.torch as sst

    if not cpu and not torch.cuda.is_available():
        sys.exit("no CUDA device (use --cpu for the CPU-only run)")
    dev = torch.device("cpu" if cpu else "cuda")
    from fakeserver import FakeServer
    from torch_train import profiled_loop

    tmp = tempfile.mkdtemp(prefix="ss-rec-")  # short: AF_UNIX paths hold 107 bytes
    sock = os.path.join(tmp, "s.sock")
    rec = FakeServer(sock, keep_raw=True).start()
    client = stepscope.attach(socket=sock, job=JOB)

    torch.manual_seed(0)
    xs = torch.randn(BATCH * steps, 3, 32, 32)
    ys = torch.randint(0, 10, (BATCH * steps,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xs, ys), batch_size=BATCH)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1),
                        nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 16 * 16, 128),
                        nn.ReLU(), nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    att = sst.attach(net, opt, loader)
    if att is None or not att.active:
        sys.exit("attach() did not activate")

    handler = sst.trace_handler(keep_dir=out)
    window = {}

    def on_ready(prof):  # trace_handler(), then keep torch's own file and table
        window["events"] = handler(prof)
        window["averages"] = averages(prof)
        if handler.last_path:
            with open(handler.last_path, "rb") as f, gzip.open(os.path.join(out, "trace.json.gz"), "wb") as g:
                shutil.copyfileobj(f, g)
            os.unlink(handler.last_path)

    def train_step(x, y):
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss.item()  # waits for the device: an iteration's kernels end inside it

    P = torch.profiler
    acts = [P.ProfilerActivity.CPU] + ([] if cpu else [P.ProfilerActivity.CUDA])
    loop = profiled_loop(loader, train_step, acts, on_ready, profile_memory=memory)
    att.detach()
    flushed = client.flush(60)
    st = dict(client.stats)
    closed = client.close(timeout=30)
    rec.stop()
    streams = list(rec.streams.values())
    with open(os.path.join(out, "records.ndjson"), "wb") as f:
        for h in rec.hellos[:1]:
            f.write(json.dumps(h, separators=(",", ":")).encode() + b"\n")
        for stream in streams:
            for raw in stream.raw:
                f.write(raw + b"\n")
    n_lines = sum(len(stream.raw) for stream in streams)
    dups = sum(stream.duplicates for stream in streams)
    with open(os.path.join(out, "key_averages.json"), "w") as f:
        json.dump(window.get("averages", []), f, indent=1)
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda, "cpu_only": cpu,
            "device": torch.cuda.get_device_name(0) if not cpu else "cpu",
            "kineto": bool(getattr(torch.autograd, "kineto_available", lambda: False)()),
            "job": JOB, "steps": steps, "recorded": att.steps, "loop": loop,
            "profile_memory": memory,
            "max_memory_allocated": torch.cuda.max_memory_allocated() if not cpu else None,
            "max_memory_reserved": torch.cuda.max_memory_reserved() if not cpu else None,
            "window_events": window.get("events"), "flushed": flushed, "closed": closed,
            "client_stats": st, "recorder": {"connections": len(rec.hellos), "streams": len(streams),
                                             "lines": n_lines, "duplicates": dups,
                                             "invalid": len(rec.invalid)}}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)
    say("torch", meta["torch"], "cuda", meta["cuda"], "device", meta["device"], "kineto", meta["kineto"])
    say("steps recorded", att.steps, "window events", window.get("events"),
        "lines recorded", n_lines, "connections", len(rec.hellos))
    say("flushed", flushed, "closed", closed, "internal_errors", st["internal_errors"],
        "dropped", st["dropped"], "last_error", st["last_error"])
    bad = []
    if memory and not cpu:
        n_mem = sum(1 for stream in streams for raw in stream.raw if b'"[memory stats]"' in raw)
        say("allocator samples ([memory stats] lines)", n_mem)
        if n_mem < att.steps:
            bad.append("collector: %d allocator samples for %d steps" % (n_mem, att.steps))
    if not window.get("events"):
        bad.append("the profiler window was not streamed")
    if not flushed or st["internal_errors"] or st["dropped"]:
        bad.append("collector: flushed %s, internal errors %s, dropped %s (%s)"
                   % (flushed, st["internal_errors"], st["dropped"], st["last_error"]))
    if len(streams) != 1 or rec.invalid:
        bad.append("recorder: %d streams, %d invalid lines" % (len(streams), len(rec.invalid)))
    for b in bad:
        say("FAIL:", b)
    log.close()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
