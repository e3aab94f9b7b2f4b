#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A CPU training run under Debian's torch 1.13 (/usr/bin/python3; torch without Kineto), for
tests/integ/test_diff_steps.py: six steps, each a ProfilerStep#N range, run "b" with one more
Conv2d+ReLU and twice the batch of run "a". Writes the profiler's Chrome trace to OUT and, for
each range A-B given, torch's own key_averages() of the events in those steps (an event is in a
step when it starts inside it: step start <= start < step end, HTA's rule) to OUT.ranges.json.

    /usr/bin/python3 torch_steps_trace.py OUT a|b A-B [A-B ...]
"""
import json
import sys

import torch
from torch.autograd.profiler_util import EventList
from torch.profiler import ProfilerActivity, profile, record_function


def main(out, run, ranges):
    torch.manual_seed(0)
    extra = run == "b"
    layers = [torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()]
    if extra:
        layers += [torch.nn.Conv2d(4, 4, 1), torch.nn.ReLU()]
    m = torch.nn.Sequential(*layers, torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(8 if extra else 4, 3, 8, 8)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(6):
            with record_function("ProfilerStep#%d" % i):
                opt.zero_grad()
                m(x).sum().backward()
                opt.step()
    prof.export_chrome_trace(out)
    events = prof.events()
    # torch names the steps' events "ProfilerStep*" (the trace keeps ProfilerStep#N): the Nth
    # by start is step N
    steps = dict(enumerate(sorted((e.time_range for e in events
                                   if e.name.startswith("ProfilerStep")), key=lambda t: t.start)))
    assert len(steps) == 6
    answer = {}
    for rng in ranges:
        a, b = (int(v) for v in rng.split("-"))
        inside = [t for n, t in steps.items() if a <= n <= b]
        kept = EventList([e for e in events
                          if any(t.start <= e.time_range.start < t.end for t in inside)])
        kept._tree_built = True  # each event keeps its children (and self time) from the whole tree
        rows = {}
        for k in kept.key_averages():
            # key_averages() keeps one row per step; stepscope's tables name them ProfilerStep*
            name = "ProfilerStep*" if k.key.startswith("ProfilerStep") else k.key
            r = rows.setdefault(name, {"calls": 0, "total_us": 0, "self_us": 0})
            r["calls"] += k.count
            r["total_us"] += k.cpu_time_total
            r["self_us"] += k.self_cpu_time_total
        answer[rng] = rows
    with open(out + ".ranges.json", "w") as f:
        json.dump(answer, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
