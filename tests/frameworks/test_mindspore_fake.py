# SPDX-License-Identifier: MIT
"""stepscope.mindspore without MindSpore: the module imports with `import mindspore` failing,
StepscopeCallback follows Model.train's documented call order (on_train_begin, then per epoch
on_train_epoch_begin, per step on_train_step_begin/on_train_step_end, on_train_epoch_end, then
on_train_end) with cb_params read through run_context.original_args(), handles sink mode (one
callback step per sink, the device queue's depth) and never raises. Against a real stepscoped."""

from hookrun import run_inline, steps_of

SCRIPT = r'''
import json, sys, time
sys.modules["mindspore"] = None           # "import mindspore" raises ImportError
import stepscope
from stepscope._hooks import NoFrameworkCallback
from stepscope.mindspore import StepscopeCallback
assert StepscopeCallback.__mro__[1] is NoFrameworkCallback


class Params(dict):                        # MindSpore's cb_params: a dict, attributes raise KeyError
    def __getattr__(self, k):
        return self[k]


class RunContext:
    def __init__(self, p):
        self.p = p

    def original_args(self):
        return self.p


class Arr:
    def __init__(self, *shape):
        self.shape = shape


R, C = 0.004, 0.003                       # the iterator's wait, the compiled step


def train(cb, epochs, sizes, p):
    rc = RunContext(p)
    cb.on_train_begin(rc)
    for e in range(epochs):
        p["cur_epoch_num"] = e + 1
        cb.on_train_epoch_begin(rc)
        for n in sizes:
            time.sleep(R)
            p["cur_step_num"] += 1
            p["train_dataset_element"] = [Arr(n, 3), Arr(n)]
            cb.on_train_step_begin(rc)
            time.sleep(C)
            cb.on_train_step_end(rc)
        cb.on_train_epoch_end(rc)
    cb.on_train_end(rc)


client = stepscope.get_client()
train(StepscopeCallback(), 2, [8, 8, 3], Params(cur_step_num=0, dataset_sink_mode=False))


class Helper:
    def __init__(self):
        self.n = 0

    def get_mbuf_queue_size(self):
        self.n += 1
        return self.n


class Dataset:
    _dataset_helper = Helper()

    def get_batch_size(self):
        return 8


# sink mode: each callback step covers 4 steps (cur_step_num moves by 4), no element
c2 = stepscope.Client(job=client.job + "-sink")
cb = StepscopeCallback(client=c2)
p = Params(cur_step_num=0, dataset_sink_mode=True, train_dataset=Dataset())
rc = RunContext(p)
cb.on_train_begin(rc)
cb.on_train_epoch_begin(rc)
for i in range(3):
    p["cur_step_num"] += 4
    cb.on_train_step_begin(rc)
    cb.on_train_step_end(rc)
cb.on_train_epoch_end(rc)
cb.on_train_end(rc)

# never raises: a run context without cb_params, one whose original_args() fails
c3 = stepscope.Client(job=client.job + "-bad")
bad = StepscopeCallback(client=c3)
class Broken:
    def original_args(self):
        raise RuntimeError("no params")
for rc in (None, Broken(), RunContext(Params())):
    bad.on_train_begin(rc)
    bad.on_train_step_begin(rc)
    bad.on_train_step_end(rc)
    bad.on_train_end(rc)
bad.on_eval_step_end(None)                 # a hook it does not define: the base's no-op

out = {"acked": client.close(timeout=60) and c2.close(timeout=60) and c3.close(timeout=60),
       "bad_internal": c3.stats["internal_errors"], "stats": client.stats}
json.dump(out, open(sys.argv[1], "w"), default=str)
'''


def test_callback_without_mindspore(daemon, tmp):
    info = run_inline(daemon, tmp, SCRIPT, "msfake")
    assert info["acked"], info
    assert info["stats"]["internal_errors"] == 0, info

    rows = steps_of(daemon, "msfake", 6)
    assert [r["step"] for r in rows] == list(range(6))        # cur_step_num - 1
    assert [r["samples"] for r in rows] == [8, 8, 3] * 2
    for r in rows:
        # no MindSpore: no Cell hooks, so dataloader + compute; the step covers both sleeps
        assert r["source"] == "none" and r["total_us"] >= 7000, r
    for a, b in zip(rows, rows[1:]):
        if b["step"] != 3:
            assert b["start_us"] == a["end_us"]                # back to back within an epoch

    rows = steps_of(daemon, "msfake-sink", 3)
    assert [r["step"] for r in rows] == [3, 7, 11]             # the last step of each sink
    assert [r["samples"] for r in rows] == [32, 32, 32]        # batch size x 4 steps
    q = daemon.wait_for("the device queue", lambda: daemon.get_json(
        "/api/v1/jobs/msfake-sink/queues")["queues"])
    assert [x["name"] for x in q] == ["get_next"] and q[0]["role"] == "device"
    assert [(p["step"], p["size"]) for p in q[0]["series"]] == [(3, 1), (7, 2), (11, 3)]

    # the broken run contexts: nothing raised, nothing counted as an internal error; each
    # begin/end pair is still one step (numbered by the client, no samples)
    assert info["bad_internal"] == 0, info
    rows = steps_of(daemon, "msfake-bad", 3)
    assert [(r["step"], r["samples"]) for r in rows] == [(0, None), (1, None), (2, None)]
