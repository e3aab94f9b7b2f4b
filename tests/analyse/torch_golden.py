#!/usr/bin/python3
# SPDX-License-Identifier: MIT
#
# Generates a golden operator table with the real PyTorch profiler, for test_analyse_ops.
# Trains a small CNN for a few steps under torch.profiler (with a DataLoader, an optimizer and a
# record_function range, so that every role of a legacy torch trace appears), exports the Chrome
# trace and dumps torch's own prof.key_averages() rows. Output, in OUTDIR:
#   trace.json      the exported Chrome trace, as torch wrote it
#   averages.tsv    key_averages(): name calls self_cpu_total_us cpu_total_us (tab-separated, the
#                   floats as repr() prints them)
#   meta.txt        torch version and whether Kineto was used
# Run with Debian's /usr/bin/python3 and python3-torch; exits 2 when torch is missing.
import sys

try:
    import torch
    import torch.nn as nn
    import torch.profiler
    from torch.utils.data import DataLoader, TensorDataset
except ImportError as e:
    sys.stderr.write("torch_golden.py: cannot import torch (%s); install Debian's python3-torch\n" % e)
    sys.exit(2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def main():
    out = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = TensorDataset(torch.randn(128, 1, 16, 16), torch.randint(0, 10, (128,)))
    loader = DataLoader(data, batch_size=8)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    done = []

    def on_ready(prof):
        # Called once, when the active window closes: the trace and the averages of that window.
        prof.export_chrome_trace(out + "/trace.json")
        with open(out + "/averages.tsv", "w") as f:
            for a in prof.key_averages():
                f.write("%s\t%d\t%r\t%r\n" % (a.key, a.count, a.self_cpu_time_total, a.cpu_time_total))
        done.append(True)

    # A schedule makes torch.profiler record ProfilerStep#N ranges (without one it records none).
    sched = torch.profiler.schedule(wait=1, warmup=1, active=steps, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=on_ready) as prof:
        for i, (x, y) in enumerate(loader):
            if i >= steps + 2:
                break
            with torch.profiler.record_function("train_step_body"):
                opt.zero_grad()
                loss = loss_fn(net(x), y)
                loss.backward()
                opt.step()
            prof.step()
    if not done:
        sys.stderr.write("torch_golden.py: the profiler never produced a trace\n")
        sys.exit(1)
    with open(out + "/meta.txt", "w") as f:
        kineto = torch.autograd.kineto_available() if hasattr(torch.autograd, "kineto_available") else False
        f.write("torch %s kineto %s\n" % (torch.__version__, kineto))


if __name__ == "__main__":
    main()
