#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Trains a small CNN with real PyTorch (Debian's python3-torch 1.13) under
stepscope.torch.attach() until told to stop, keeping every capture window the attachment ran,
for the repeated captures of tests/frameworks/test_torch_repeat.py. Socket and job come from
STEPSCOPE_SOCKET / STEPSCOPE_JOB.

    torch_repeat_train.py OUT.json READY_FILE STOP_FILE MAX_SECONDS

Touches READY_FILE once a few steps ran (the test then POSTs), trains until STOP_FILE exists (or
MAX_SECONDS), then writes each finished window (id, state, first and last step, events) and the
step count to OUT.json.
"""
import json
import pathlib
import sys
import time

import torch

from torch_capture_train import make_training


def main():
    out, ready, stop = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    deadline = time.monotonic() + float(sys.argv[4])
    client, loader, net, opt, loss_fn, att = make_training()
    windows, seen, steps = [], None, 0
    for x, y in loader:
        with torch.profiler.record_function("train_step_body"):
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
        time.sleep(0.03)
        steps += 1
        if steps == 3:
            ready.write_text("ready")
        cap = att.last_capture
        if cap is not None and cap is not seen:
            seen = cap
            windows.append({k: cap.get(k) for k in ("id", "state", "first_step", "last_step",
                                                    "events")})
        if stop.exists() or time.monotonic() > deadline:
            break
    att.detach()
    flushed = client.flush(30)
    st = client.stats
    with open(out, "w") as f:
        json.dump({"flushed": flushed, "internal_errors": st["internal_errors"],
                   "dropped": st["dropped"], "recorded": att.steps, "windows": windows}, f)


if __name__ == "__main__":
    main()
