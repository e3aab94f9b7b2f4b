#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Trains a small CNN with real PyTorch (Debian's python3-torch 1.13 under /usr/bin/python3) against
a running stepscoped, for tests/frameworks/test_torch.py. The socket and job come from
STEPSCOPE_SOCKET / STEPSCOPE_JOB; the collector (collectors/python) must be on PYTHONPATH.

    torch_train.py attach OUT.json STEPS NUM_WORKERS
        stepscope.torch.attach() on model, optimizer and DataLoader. The dataset, the model and
        the optimizer each hold a known sleep (SLEEP_* below) so that every phase has a floor the
        test can check; the script also times each phase from the outside (an upper bound).
        With workers the script makes the client (stepscope.attach()) before attach(), without
        it leaves that to attach().
    torch_train.py profile OUTDIR STEPS
        torch.profiler.profile with a schedule and on_trace_ready=stepscope.torch.trace_handler
        (keeping the exported file in OUTDIR), plus prof.key_averages() of the same window.
    torch_train.py autograd OUTDIR
        the same with torch.autograd.profiler.profile, the handler called by hand.
    torch_train.py attach-profile OUTDIR STEPS
        attach() on model, optimizer and DataLoader and, around the same loop, a torch.profiler
        window (schedule wait=1 warmup=1 active=4, prof.step() each iteration) whose
        on_trace_ready is stepscope.torch.trace_handler() (the file kept in OUTDIR); the loop
        notes each iteration's wall-clock bounds, the profiler's step_num in it and what the
        schedule did with it.
    torch_train.py attach-profile-cycles OUTDIR STEPS
        the same with the schedule's default repeat=0 (the issue's schedule(wait=1, warmup=1,
        active=4)): windows follow each other until the loop ends, and the last one is cut by it
        (torch closes its open ProfilerStep range when the profiler stops).
    torch_train.py memory-stand-in OUT.json STEPS
        run_attach()'s loop (no workers) with a stand-in for torch.cuda's allocator figures: this
        machine has no CUDA, so is_available(), is_initialized(), device_count() (2) and
        memory_stats() are replaced by a scripted allocator whose GPU0 allocated bytes rise and
        fall step by step and whose GPU1 never held memory. OUT.json gets every memory_stats()
        answer, in call order, beside run_attach()'s figures.
    torch_train.py hostile OUT.json
        10 steps through attach() with dict batches, a forward that raises once (the loop catches
        it), a user phase inside the attached step, then detach() and 2 steps more.

Writes JSON to OUT.json / OUTDIR/result.json; exits non-zero on any failure.
"""
import json
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

import stepscope
import stepscope.torch

BATCH = 8
N_SAMPLES = 8 * 64 + 3        # the last batch holds 3 samples
SLEEP_LOAD = 0.004            # per sample in the dataset: >= 32 ms per full batch
SLEEP_FORWARD = 0.006         # in the model's forward
SLEEP_BACKWARD = 0.008        # in a custom autograd function's backward
SLEEP_OPT = 0.003             # in the optimizer's step


class Data(Dataset):
    def __init__(self, n, sleep):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 1, 16, 16, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.sleep = sleep

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.sleep:
            time.sleep(self.sleep)
        return self.x[i], self.y[i]


class SlowBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, sleep):
        ctx.sleep = sleep
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        if ctx.sleep:
            time.sleep(ctx.sleep)
        return g, None


class Net(nn.Module):
    def __init__(self, sleep_fwd=0.0, sleep_bwd=0.0):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)
        self.sleep_fwd, self.sleep_bwd = sleep_fwd, sleep_bwd

    def forward(self, x):
        if self.sleep_fwd:
            time.sleep(self.sleep_fwd)
        x = self.conv1(x)
        x = SlowBackward.apply(x, self.sleep_bwd) if self.sleep_bwd else x  # needs a grad input
        x = self.pool(torch.relu(x))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class SlowSGD(torch.optim.SGD):
    def step(self, closure=None):
        time.sleep(SLEEP_OPT)
        return super().step(closure)


def run_attach(out, steps, workers):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # with workers, a client made (and connected) before attach(); without, the one attach() makes
    client = stepscope.attach() if workers else None
    loader = DataLoader(Data(N_SAMPLES, SLEEP_LOAD), batch_size=BATCH, num_workers=workers,
                        prefetch_factor=2 if workers else 2)
    net = Net(SLEEP_FORWARD, SLEEP_BACKWARD)
    opt = SlowSGD(net.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)  # wraps optimizer.step too
    loss_fn = nn.CrossEntropyLoss()
    att = stepscope.torch.attach(net, opt, loader)
    assert att is not None and att.active, "attach() did not activate"
    client = client or stepscope.get_client()
    outer = []  # what this loop measured around each phase, ns
    it = iter(loader)
    for i in range(steps + 1):
        t0 = time.time_ns()
        try:
            x, y = next(it)
        except StopIteration:
            break
        t1 = time.time_ns()
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        t2 = time.time_ns()
        loss.backward()
        t3 = time.time_ns()
        opt.step()
        sched.step()
        t4 = time.time_ns()
        outer.append({"samples": len(x), "dataloader": t1 - t0, "forward": t2 - t1,
                      "backward": t3 - t2, "optimizer": t4 - t3, "begin": t0})
        if i + 1 == steps:
            break
    del it  # leaving the loop early: the attachment records the open step
    # An evaluation pass after training is not a step.
    with torch.no_grad():
        net(torch.randn(2, 1, 16, 16))
    att.detach()
    flushed = client.flush(30)
    st = client.stats
    with open(out, "w") as f:
        json.dump({"steps": outer, "recorded": att.steps, "flushed": flushed,
                   "internal_errors": st["internal_errors"], "dropped": st["dropped"],
                   "last_error": st["last_error"], "lr": sched.get_last_lr(),
                   "torch": torch.__version__}, f)


class CudaStandIn:
    """torch.cuda's allocator figures as a scripted allocator (see memory-stand-in)."""

    def __init__(self):
        self.calls = []
        self.peak = 0

    def memory_stats(self, device=None):
        n = sum(1 for c in self.calls if c["device"] == device)
        if device != 0:
            st = {"allocated_bytes.all.current": 0, "reserved_bytes.all.current": 0,
                  "allocated_bytes.all.peak": 0, "reserved_bytes.all.peak": 0}
        else:
            cur = 1 << 20 | (n * 7919 % 13) << 16  # rises and falls; its top at n = 11
            self.peak = max(self.peak, cur + 4096)  # a transient peak between two samples
            st = {"allocated_bytes.all.current": cur, "reserved_bytes.all.current": 4 << 20,
                  "allocated_bytes.all.peak": self.peak, "reserved_bytes.all.peak": 4 << 20}
        self.calls.append(dict(st, device=device))
        return st


def run_memory_stand_in(out, steps):
    fake = CudaStandIn()
    torch.cuda.is_available = lambda: True
    torch.cuda.is_initialized = lambda: True
    torch.cuda.device_count = lambda: 2
    torch.cuda.memory_stats = fake.memory_stats
    run_attach(out, steps, 0)
    res = json.load(open(out))
    res["memory_stats"] = fake.calls
    with open(out, "w") as f:
        json.dump(res, f)


class DictData(Dataset):
    def __len__(self):
        return 8 * 12

    def __getitem__(self, i):
        return {"meta": "sample-%d" % i, "x": torch.randn(1, 16, 16), "y": i % 10}


def run_hostile(out):
    """What a real loop may do around the hooks; the collector must neither raise nor count an
    internal error, and the user's own exception must reach the user unchanged."""
    torch.manual_seed(0)
    client = stepscope.attach()
    loader = DataLoader(DictData(), batch_size=8)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    orig_forward = net.forward
    raised = []

    def forward(x):
        if len(raised) == 0 and forward.calls == 3:
            raise ValueError("user error")
        forward.calls += 1
        return orig_forward(x)
    forward.calls = 0
    net.forward = forward
    att = stepscope.torch.attach(net, opt, loader)
    steps = 0
    for i, b in enumerate(loader):
        if i == 10:
            break
        steps += 1
        opt.zero_grad()
        try:
            out_ = net(b["x"])
        except ValueError as e:
            raised.append(str(e))
            continue
        with client.phase("custom"):
            loss = loss_fn(out_, b["y"])
        loss.backward()
        opt.step()
    att.detach()
    recorded = att.steps
    for i, b in enumerate(loader):  # no more records once detached
        if i == 2:
            break
        loss_fn(net(b["x"]), b["y"]).backward()
        opt.step()
    flushed = client.flush(30)
    st = client.stats
    with open(out, "w") as f:
        json.dump({"steps": steps, "recorded": recorded, "raised": raised, "flushed": flushed,
                   "records": st["records"], "internal_errors": st["internal_errors"],
                   "dropped": st["dropped"], "last_error": st["last_error"]}, f)


def make_training(steps_total):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(Data(BATCH * steps_total, 0.0), batch_size=BATCH)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def train_step(x, y):
        with torch.profiler.record_function("train_step_body"):
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
    return loader, train_step


def averages(prof):
    return [{"name": a.key, "calls": a.count, "self_cpu_total_us": a.self_cpu_time_total,
             "cpu_total_us": a.cpu_time_total} for a in prof.key_averages()]


def window_recorder(outdir):
    """The client attach() starts, and an on_trace_ready that streams each profiler window
    through trace_handler() (kept in outdir) and records it in the list it returns."""
    client = stepscope.attach()
    handler = stepscope.torch.trace_handler(keep_dir=outdir)
    windows = []

    def on_ready(prof):
        n = handler(prof)
        windows.append({"events": n, "path": handler.last_path, "averages": averages(prof)})

    return client, windows, on_ready


def run_profile(outdir, steps):
    client, windows, on_ready = window_recorder(outdir)
    loader, train_step = make_training(steps + 2)
    sched = torch.profiler.schedule(wait=1, warmup=1, active=steps, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=on_ready) as prof:
        for x, y in loader:
            train_step(x, y)
            prof.step()
    finish(client, outdir, windows, "torch.profiler.profile")


def run_autograd(outdir):
    client = stepscope.attach()
    handler = stepscope.torch.trace_handler(keep_dir=outdir)
    loader, train_step = make_training(3)
    with torch.autograd.profiler.profile() as prof:
        for x, y in loader:
            train_step(x, y)
    n = handler(prof)
    finish(client, outdir, [{"events": n, "path": handler.last_path, "averages": averages(prof)}],
           "torch.autograd.profiler.profile")


def profiled_loop(loader, train_step, activities, on_ready, repeat=1, profile_memory=False):
    """Runs train_step(x, y) on every batch of loader inside a torch.profiler window (schedule
    wait=1, warmup=1, active=4, repeat (0: cycles until the loop ends, torch's default),
    prof.step() after each iteration; on_trace_ready=on_ready; profile_memory as torch takes it).
    Returns each iteration's wall-clock bounds (begin before its next(), end before its
    prof.step()), the profiler's step_num in it, the schedule's action for it and what
    train_step returned. tests/device/cuda_attach.py runs the same loop on CUDA."""
    loop = []
    sched = torch.profiler.schedule(wait=1, warmup=1, active=4, repeat=repeat)
    with torch.profiler.profile(activities=activities, schedule=sched, on_trace_ready=on_ready,
                                profile_memory=profile_memory) as prof:
        it = iter(loader)
        while True:
            t0 = time.time_ns()
            try:
                x, y = next(it)
            except StopIteration:
                break
            ret = train_step(x, y)
            loop.append({"begin": t0, "end": time.time_ns(), "profiler_step": prof.step_num,
                         "action": sched(prof.step_num).name, "ret": ret})
            prof.step()
    return loop


def run_attach_profile(outdir, steps, repeat=1):
    """attach() and a profiler window over the same loop: the steps attach() records and the
    ProfilerStep#N spans of the window must be one numbering (docs/ANALYSIS.md "Step identity")."""
    client, windows, on_ready = window_recorder(outdir)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(Data(BATCH * steps, 0.001), batch_size=BATCH)
    net = Net(0.002, 0.002)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    att = stepscope.torch.attach(net, opt, loader)
    assert att is not None and att.active, "attach() did not activate"

    def train_step(x, y):
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()

    loop = profiled_loop(loader, train_step, [torch.profiler.ProfilerActivity.CPU], on_ready,
                         repeat)
    att.detach()
    finish(client, outdir, windows, "torch.profiler.profile", {"loop": loop, "recorded": att.steps})


def finish(client, outdir, windows, api, extra=None):
    flushed = client.flush(30)
    st = client.stats
    kineto = torch.autograd.kineto_available() if hasattr(torch.autograd, "kineto_available") else False
    with open(outdir + "/result.json", "w") as f:
        json.dump({"windows": windows, "flushed": flushed, "internal_errors": st["internal_errors"],
                   "dropped": st["dropped"], "last_error": st["last_error"], "api": api,
                   "torch": torch.__version__, "kineto": bool(kineto), **(extra or {})}, f)


def main():
    mode = sys.argv[1]
    if mode == "attach":
        run_attach(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "profile":
        run_profile(sys.argv[2], int(sys.argv[3]))
    elif mode == "autograd":
        run_autograd(sys.argv[2])
    elif mode == "attach-profile":
        run_attach_profile(sys.argv[2], int(sys.argv[3]))
    elif mode == "attach-profile-cycles":
        run_attach_profile(sys.argv[2], int(sys.argv[3]), repeat=0)
    elif mode == "memory-stand-in":
        run_memory_stand_in(sys.argv[2], int(sys.argv[3]))
    elif mode == "hostile":
        run_hostile(sys.argv[2])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
