# SPDX-License-Identifier: MIT
"""Trains a small MindSpore model on the CPU (PyNative) with stepscope.mindspore's
StepscopeCallback until the daemon has asked for a capture and it is over, for
tests/frameworks/test_mindspore_capture.py. Socket and job from STEPSCOPE_SOCKET / STEPSCOPE_JOB.

    mindspore_capture_train.py OUT.json READY_FILE MAX_SECONDS

Touches READY_FILE once a few steps ran (the test then POSTs the capture), stops training two
steps after the capture is over (or after MAX_SECONDS), then writes the capture
(callback's hook.captures.last) and the client's stats to OUT.json. MindSpore's profiler output
goes to a stepscope-mindspore-* folder beside OUT.json.
"""
import json
import pathlib
import sys
import time

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import nn

from mindspore_train import Net
from stepscope.mindspore import StepscopeCallback


def samples():
    """Finite (Model.train asks the dataset's size): 500 batches of 8, far more than needed."""
    rng = np.random.default_rng(0)
    for _ in range(4000):
        yield (rng.standard_normal((1, 8, 8)).astype(np.float32),
               np.eye(4, dtype=np.float32)[rng.integers(0, 4)])


class Until(ms.train.Callback):
    """Touches READY after 3 steps; stops 2 steps after the capture ended, or at the deadline."""

    def __init__(self, ss, ready, max_s):
        super().__init__()
        self.ss, self.ready, self.deadline = ss, ready, time.monotonic() + max_s
        self.n, self.after = 0, None

    def on_train_step_end(self, run_context):
        self.n += 1
        time.sleep(0.01)
        if self.n == 3:
            self.ready.write_text("ready")
        h = self.ss._hook
        if self.after is None and h is not None and h.captures.last is not None:
            self.after = 2
        if self.after is not None:
            self.after -= 1
        if (self.after is not None and self.after < 0) or time.monotonic() > self.deadline:
            run_context.request_stop()


def main():
    out, ready, max_s = sys.argv[1], pathlib.Path(sys.argv[2]), float(sys.argv[3])
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    net = Net()
    model = ms.train.Model(net, nn.SoftmaxCrossEntropyWithLogits(reduction="mean"),
                           nn.SGD(net.trainable_params(), 0.01))
    data = ds.GeneratorDataset(samples, ["x", "y"], shuffle=False).batch(8)
    ss = StepscopeCallback(capture_dir=str(pathlib.Path(out).parent))
    model.train(1, data, callbacks=[ss, Until(ss, ready, max_s)], dataset_sink_mode=False)
    client = ss._hook.client
    cap = ss._hook.captures.last
    flushed = client.flush(30)
    st = client.stats
    res = {"flushed": flushed, "internal_errors": st["internal_errors"], "dropped": st["dropped"],
           "last_error": st["last_error"], "capture": cap}
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
