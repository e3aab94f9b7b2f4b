#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A small CPU training run under Debian's torch 1.13 profiler (record_shapes, with_stack), written
as a Kineto trace with "Input Dims" and "Call stack" args, and that run's own key_averages grouped
by input shape and by call stack. Used by tests/integ/test_operator_view.py (checks
/operator-view against the tables) and tests/e2e/e2e.mjs (the Operators page's call stacks).

    /usr/bin/python3 tests/analyse/torch113_opview_trace.py TRACE.json TABLES.json

Debian's torch is built without Kineto: its Chrome export is the legacy one, which drops every
arg. So the run's own events are written as Kineto writes them (cat cpu_op, args "Input Dims",
"Call stack" joined by ";", "External id"). Their times are whole µs, start and end each cut, so a
child can end 1 µs past its parent, which a tree by containment (torch-tb-profiler's) takes for a
crossing, while key_averages uses the profiler's own parent links. So each event is laid into its
parent (1 ns inside) after its previous sibling, parents first: the tree is then the profiler's,
and the times are the profiler's only to a few µs (the test compares keys and calls).
"""
import json
import sys

import torch


def run():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 14 * 14, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def forward(bs):
        return model(torch.randn(bs, 3, 16, 16)).sum()

    def step(bs):
        forward(bs).backward()
        opt.step()
        opt.zero_grad()

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                record_shapes=True, with_stack=True) as prof:
        for i in range(4):
            step(4 if i % 2 else 8)
    return prof


def laid_out(events):
    """Each event's (start, end) in ns, nested as the profiler's parent links say."""
    span, kids, roots = {}, {}, {}
    for e in events:
        if e.cpu_parent is None:
            roots.setdefault(e.thread, []).append(e)
        else:
            kids.setdefault(e.cpu_parent.id, []).append(e)

    def lay(e, lo, hi):
        s = min(max(e.time_range.start * 1000, lo), hi)
        t = max(min(e.time_range.end * 1000, hi), s)
        span[e.id] = (s, t)
        prev = s + 1
        for c in sorted(kids.get(e.id, []), key=lambda c: c.time_range.start):
            prev = lay(c, prev, t - 1)[1]
        return s, t

    for rs in roots.values():
        prev = float("-inf")
        for r in sorted(rs, key=lambda r: r.time_range.start):
            prev = lay(r, prev, float("inf"))[1]
    return span


def rows(averages):
    return [{"name": e.key, "count": e.count, "input_shapes": str(e.input_shapes),
             "stack": list(e.stack), "self_cpu_us": e.self_cpu_time_total,
             "cpu_total_us": e.cpu_time_total} for e in averages]


def main():
    prof = run()
    span = laid_out(prof.events())
    events = []
    for e in prof.events():
        s, t = span[e.id]
        events.append({"ph": "X", "cat": "cpu_op", "name": e.name, "pid": 1, "tid": e.thread,
                       "ts": s / 1000, "dur": (t - s) / 1000,
                       "args": {"External id": e.id + 1, "Input Dims": e.input_shapes,
                                "Call stack": ";".join(e.stack)}})
    with open(sys.argv[1], "w") as f:
        json.dump({"traceEvents": events}, f)
    with open(sys.argv[2], "w") as f:
        json.dump({"torch": torch.__version__,
                   "by_input_shape": rows(prof.key_averages(group_by_input_shape=True)),
                   "by_stack": rows(prof.key_averages(group_by_stack_n=1000))}, f)


if __name__ == "__main__":
    main()
