# SPDX-License-Identifier: MIT
"""stepscope.paddle without Paddle: the module imports with `import paddle` failing, its hooks
work on objects that follow Paddle's documented call order (Layer forward pre/post hooks, an
optimizer's step()/minimize(), paddle.Model's callback order), never raise into the loop, and
stream_chrome_trace rebuilds Paddle's truncated timestamps. Against a real stepscoped."""
import re

from hookrun import run_inline, steps_of

SCRIPT = r'''
import json, sys, time
sys.modules["paddle"] = None              # "import paddle" raises ImportError
import stepscope
import stepscope.paddle as ssp
from stepscope._hooks import NoFrameworkCallback
assert ssp.StepscopeCallback.__mro__[1] is NoFrameworkCallback

R, F, B, O = 0.004, 0.003, 0.002, 0.0015  # reader, forward, backward, optimizer sleeps


class T:                                   # a tensor: Paddle's shape is a list
    def __init__(self, n):
        self.shape = [n, 3]


class Handle:
    def __init__(self, d, k):
        self.d, self.k = d, k

    def remove(self):
        self.d.pop(self.k, None)


class Layer:                               # paddle.nn.Layer's order: pre hooks, forward, post
    def __init__(self):
        self.pre, self.post = {}, {}

    def register_forward_pre_hook(self, fn):
        self.pre[len(self.pre) + len(self.post)] = fn
        return Handle(self.pre, len(self.pre) + len(self.post) - 1)

    def register_forward_post_hook(self, fn):
        k = 100 + len(self.post)
        self.post[k] = fn
        return Handle(self.post, k)

    def __call__(self, x):
        for fn in list(self.pre.values()):
            fn(self, (x,))
        time.sleep(F)
        for fn in list(self.post.values()):
            fn(self, (x,), x)
        return x


class Opt:
    def step(self):
        time.sleep(O)

    def minimize(self, loss):
        time.sleep(O)


def reader(batches):
    for b in batches:
        time.sleep(R)
        yield b


out = {}
client = stepscope.get_client()
net, opt = Layer(), Opt()
hook = ssp.attach(net, opt)
sizes = [8] * 5 + [3]
for x in hook.loader(reader([T(n) for n in sizes])):
    net(x)
    time.sleep(B)                          # backward
    opt.step()
hook.detach()
out["restored"] = not net.pre and not net.post and "step" not in vars(opt)


class Loader:                              # a loader object: attach() swaps its class
    def __init__(self, sizes):
        self.sizes = sizes

    def __iter__(self):
        return reader([T(n) for n in self.sizes])


# attach(..., dataloader): a plain for loop over the loader object
c1 = stepscope.Client(job=client.job + "-loader")
ld = Loader([6, 6])
h1 = ssp.attach(net, opt, ld, client=c1)
for x in ld:
    net(x)
    time.sleep(B)
    opt.step()
h1.detach()
out["restored"] = out["restored"] and type(ld) is Loader

# no optimizer watched: the next fetch ends a step (forward-only loop)
c2 = stepscope.Client(job=client.job + "-noopt")
h2 = ssp.attach(net, client=c2)
for x in h2.loader(reader([T(4)] * 3)):
    net(x)
h2.detach()

# paddle.Model.fit's order with StepscopeCallback (hapi calls optimizer.minimize)
c3 = stepscope.Client(job=client.job + "-hapi")
cb = ssp.StepscopeCallback(client=c3)
cb.model = type("M", (), {"network": net, "_optimizer": opt})()
cb.on_train_begin({})
for epoch in range(2):
    cb.on_epoch_begin(epoch, {})
    for step in range(3):
        time.sleep(R)                      # hapi's reader, before on_train_batch_begin
        cb.on_train_batch_begin(step, {})
        net(T(5))
        time.sleep(B)
        opt.minimize(None)
        cb.on_train_batch_end(step, {"batch_size": 5, "loss": [0.5]})
    cb.on_epoch_end(epoch, {})
cb.on_train_end({})

# never raises: garbage into the hooks, a profiler whose export fails, a closed client
c4 = stepscope.Client(job=client.job + "-bad")
h4 = ssp.StepHook(client=c4)
h4._fwd_post(None, None, None)
h4._opt_end()
ssp.StepscopeCallback(client=c4).on_train_batch_end(0, {"batch_size": "x"})
class BadProf:
    def export(self, path, format):
        raise RuntimeError("export failed")
ssp.trace_handler(client=c4)(BadProf())
garbage = {"traceEvents": [None, 5, {"ph": "X"}, {"name": "x"}]}
out["garbage_sent"] = ssp.stream_chrome_trace(garbage, c4)
out["not_a_doc"] = (ssp.stream_chrome_trace("nonsense", c4)
                    + ssp.stream_chrome_trace({"traceEvents": 3}, c4))
out["bad_internal"] = c4.stats["internal_errors"]
c4.close()
list(ssp.attach(Layer(), Opt(), client=c4).loader([T(1)]))   # records after close: dropped

# a Paddle chrome trace window: truncated ts, exact start_time offsets, "[dur us]" suffixes
c5 = stepscope.Client(job=client.job + "-window")
B0 = 1700000000000000
def ev(name, cat, off, dur):
    return {"name": "%s[%.3f us]" % (name, dur), "ph": "X", "cat": cat, "pid": 7,
            "tid": "7(C++)", "ts": B0 + int(off), "dur": dur,
            "args": {"start_time": "%.3f us" % off, "end_time": "%.3f us" % (off + dur)}}
doc = {"traceEvents": [
    {"name": "process_name", "ph": "M", "pid": 7, "tid": "7(C++)", "args": {"name": "p"}},
    ev("ProfileStep#0", "ProfileStep", 0.0, 200.0),
    ev("matmul dygraph", "Operator", 100.9, 5.0),
    ev("matmul infer_meta", "OperatorInner", 104.8, 1.05)]}
out["window_sent"] = ssp.stream_chrome_trace(doc, c5)

out["acked"] = all(c.close(timeout=60) for c in (client, c1, c2, c3, c5))
out["stats"] = client.stats
json.dump(out, open(sys.argv[1], "w"), default=str)
'''


def test_hooks_without_paddle(daemon, tmp):
    info = run_inline(daemon, tmp, SCRIPT, "pfake")
    assert info["acked"] and info["restored"], info
    assert info["bad_internal"] == 1, info   # the failed export
    assert info["garbage_sent"] == 1 and info["not_a_doc"] == 0, info  # only what has "ph"

    # the loop: step = fetch .. optimizer end; interval = reader, fp_bp = forward + backward
    rows = steps_of(daemon, "pfake", 6)
    daemon.wait_for("a host sample", lambda: daemon.job("pfake")["host_samples"] >= 1)
    assert [r["samples"] for r in rows] == [8] * 5 + [3]
    for r in rows:
        assert r["source"] == "phases", r
        assert r["interval_us"] >= 4000 and r["fp_bp_us"] >= 5000 and r["tail_us"] >= 1500, r
        assert r["fp_bp_us"] < r["total_us"] - 5000, r   # the reader is not in fp_bp
    rows = steps_of(daemon, "pfake-loader", 2)
    assert [r["samples"] for r in rows] == [6, 6]
    assert all(r["interval_us"] >= 4000 and r["fp_bp_us"] >= 5000 for r in rows), rows
    # no optimizer: three forward-only steps, each ended by the next fetch (or the loop's end)
    rows = steps_of(daemon, "pfake-noopt", 3)
    assert [r["samples"] for r in rows] == [4, 4, 4]
    assert all(r["interval_us"] >= 4000 and r["fp_bp_us"] >= 3000 for r in rows), rows
    assert rows[1]["start_us"] >= rows[0]["end_us"]
    # the callback: 2 epochs x 3 batches, numbered on, samples from logs["batch_size"]
    rows = steps_of(daemon, "pfake-hapi", 6)
    assert [r["step"] for r in rows] == list(range(6))
    assert all(r["samples"] == 5 and r["interval_us"] >= 4000 and r["fp_bp_us"] >= 5000
               and r["tail_us"] >= 1500 for r in rows), rows
    # records after close were dropped, not sent
    assert "pfake-bad" not in [j["name"] for j in daemon.jobs()] or \
        daemon.job("pfake-bad")["steps"] == 0

    # the window: the ns offsets are kept (ts text), so the inner op nests in its operator
    st, _, body = daemon.request("/api/v1/jobs/pfake-window/timeline")
    assert st == 200
    text = body.decode()
    assert '"ts":1700000000000100.900' in text and '"ts":1700000000000104.800' in text
    assert not re.search(r'us\]"', text), "duration suffix kept"
    ops = daemon.wait_for("the window's three operators", lambda: {
        r["name"]: r for r in daemon.get_json("/api/v1/jobs/pfake-window/operators")["rows"]}
        if daemon.get_json("/api/v1/jobs/pfake-window/operators")["total"] == 3 else None)
    assert abs(ops["matmul dygraph"]["self_us"] - 3.95) < 0.001, ops   # 5.0 - 1.05 nested
    assert ops["ProfileStep*"]["calls"] == 1
