# SPDX-License-Identifier: MIT
"""Trains a small MindSpore model on the CPU with Model.train and StepscopeCallback (run by
test_mindspore.py).

    python3 mindspore_train.py pynative OUT.json   # MindSpore's default mode: Cell hooks time
                                                   # forward, backward and optimizer
    python3 mindspore_train.py graph OUT.json      # GRAPH_MODE: one compiled train step

The network's construct sleeps FORWARD_S and the optimizer's OPTIMIZER_S (PyNative runs them as
Python), and the dataset's generator READER_S per batch, so the test can check each phase's
floor. OUT.json gets the batch sizes and the floors.
"""
import json
import sys
import time

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import nn

import stepscope
from stepscope.mindspore import StepscopeCallback

READER_S, FORWARD_S, OPTIMIZER_S = 0.004, 0.003, 0.0015
BATCH, N, EPOCHS = 8, 92, 2          # 11 batches of 8 and one of 4, twice


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="same")
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(4 * 8 * 8, 4)

    def construct(self, x):
        if SLEEPS:
            time.sleep(FORWARD_S)
        return self.fc(self.flatten(self.relu(self.conv(x))))


class SlowSGD(nn.SGD):
    def construct(self, gradients):
        if SLEEPS:
            time.sleep(OPTIMIZER_S)
        return super().construct(gradients)


def samples():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, 1, 8, 8)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[np.arange(N) % 4]
    for i in range(N):
        if i % BATCH == 0:
            time.sleep(READER_S)
        yield x[i], y[i]


def main(mode, out):
    global SLEEPS
    SLEEPS = mode == "pynative"      # graph mode compiles construct: no Python sleeps there
    ms.set_context(mode=ms.PYNATIVE_MODE if mode == "pynative" else ms.GRAPH_MODE,
                   device_target="CPU")
    ms.set_seed(0)
    data = ds.GeneratorDataset(samples, ["x", "y"], shuffle=False).batch(BATCH)
    net = Net()
    opt = SlowSGD(net.trainable_params(), learning_rate=0.01) if SLEEPS else \
        nn.SGD(net.trainable_params(), learning_rate=0.01)
    model = ms.train.Model(net, nn.SoftmaxCrossEntropyWithLogits(reduction="mean"), opt)
    model.train(EPOCHS, data, callbacks=[StepscopeCallback()], dataset_sink_mode=False)
    client = stepscope.get_client()
    acked = client.close(timeout=60)
    sizes = ([BATCH] * (N // BATCH) + ([N % BATCH] if N % BATCH else [])) * EPOCHS
    json.dump({"version": ms.__version__, "sizes": sizes, "acked": acked, "stats": client.stats,
               "floors_us": {"dataloader": READER_S * 1e6, "forward": FORWARD_S * 1e6,
                             "optimizer": OPTIMIZER_S * 1e6}},
              open(out, "w"), default=str)


SLEEPS = True

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
