#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Trains a small CNN with real PyTorch (Debian's python3-torch 1.13) under
stepscope.torch.attach() until the daemon has asked for a capture and it is over, for
tests/frameworks/test_torch_capture.py. Socket and job come from STEPSCOPE_SOCKET / STEPSCOPE_JOB.

    torch_capture_train.py OUT.json READY_FILE MAX_SECONDS

Touches READY_FILE once a few steps ran (the test then POSTs the capture), trains until the
capture is over plus two steps (or MAX_SECONDS), then writes the capture's window as torch itself
summarises it (prof.key_averages() of the attachment's profiler) and the step numbers to OUT.json.
"""
import json
import pathlib
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

import stepscope
import stepscope.torch


class Data(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return torch.randn(1, 16, 16), i % 10


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 16 * 16, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def make_training():
    """The client, loader, model, optimizer, loss and the attachment (also torch_repeat_train.py)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    client = stepscope.attach()
    loader = DataLoader(Data(), batch_size=8)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    att = stepscope.torch.attach(net, opt, loader)
    assert att is not None and att.active
    return client, loader, net, opt, loss_fn, att


def main():
    out, ready, max_s = sys.argv[1], pathlib.Path(sys.argv[2]), float(sys.argv[3])
    client, loader, net, opt, loss_fn, att = make_training()
    deadline = time.monotonic() + max_s
    after = None  # steps still to run once the capture is over
    steps = 0
    for x, y in loader:
        with torch.profiler.record_function("train_step_body"):
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
        time.sleep(0.01)
        steps += 1
        if steps == 3:
            ready.write_text("ready")
        if after is None and att.last_capture is not None:
            after = 2
        if after is not None:
            after -= 1
            if after < 0:
                break
        if time.monotonic() > deadline:
            break
    cap = att.last_capture
    att.detach()
    flushed = client.flush(30)
    st = client.stats
    res = {"flushed": flushed, "internal_errors": st["internal_errors"], "dropped": st["dropped"],
           "last_error": st["last_error"], "steps": steps, "recorded": att.steps, "capture": None}
    if cap is not None:
        res["capture"] = {
            "id": cap["id"], "state": cap["state"], "first_step": cap["first_step"],
            "last_step": cap["last_step"], "events": cap.get("events"), "what": cap["what"],
            "averages": [{"name": a.key, "calls": a.count,
                          "self_cpu_total_us": a.self_cpu_time_total,
                          "cpu_total_us": a.cpu_time_total}
                         for a in cap["profiler"].key_averages()]}
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
