# SPDX-License-Identifier: MIT
"""Trains a small Paddle model on the CPU under stepscope.paddle.attach() until the daemon has
asked for a capture and it is over, for tests/frameworks/test_paddle_capture.py. Socket and job
come from STEPSCOPE_SOCKET / STEPSCOPE_JOB.

    paddle_capture_train.py OUT.json READY_FILE MAX_SECONDS

Touches READY_FILE once a few steps ran (the test then POSTs the capture), trains until the
capture is over plus two steps (or MAX_SECONDS), then writes the capture (hook.captures.last) and
the client's stats to OUT.json.
"""
import json
import pathlib
import sys
import time

import numpy as np
import paddle

import stepscope.paddle as ssp
from paddle_train import Net  # conv + fc, with a known forward floor


def batches():
    rng = np.random.default_rng(0)
    while True:
        yield (paddle.to_tensor(rng.standard_normal((8, 1, 8, 8)).astype("float32")),
               paddle.to_tensor(rng.integers(0, 4, (8,)).astype("int64")))


def main():
    out, ready, max_s = sys.argv[1], pathlib.Path(sys.argv[2]), float(sys.argv[3])
    paddle.set_device("cpu")
    net = Net()
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=net.parameters())
    hook = ssp.attach(net, opt)
    client = hook.client
    loss_fn = paddle.nn.CrossEntropyLoss()
    deadline = time.monotonic() + max_s
    steps, after = 0, None
    for x, y in hook.loader(batches()):
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        time.sleep(0.01)
        steps += 1
        if steps == 3:
            ready.write_text("ready")
        if after is None and hook.captures.last is not None:
            after = 2
        if after is not None:
            after -= 1
            if after < 0:
                break
        if time.monotonic() > deadline:
            break
    cap = hook.captures.last
    hook.detach()
    flushed = client.flush(30)
    st = client.stats
    res = {"flushed": flushed, "internal_errors": st["internal_errors"], "dropped": st["dropped"],
           "last_error": st["last_error"], "steps": steps, "capture": cap}
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
