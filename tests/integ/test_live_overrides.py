# SPDX-License-Identifier: MIT
"""Step-trace FP/BP overrides and role rules over the REST API: automatic points; a hello's env
(FP_POINT, PROFILING_*, STEPSCOPE_*) moving FP/BP with its origin and the stages moving exactly;
the daemon's --fp-point / STEPSCOPE_FP_POINT / fp_point (origin "config"), which a job's own env
beats; a role_rules file turning a custom span into a communication op (BP moves before it,
/operators drops it); a bad role_rules file refused with its line number (exit 2)."""
from ssclient import Client

T0 = 1000000  # us
DATA = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def span(name, ts, dur, cat="cpu_op"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": T0 + ts, "dur": dur}


# One 200 us step: data 0-20, conv2d 30-100, linear 110-130, relu 135-145, my_gradsync 150-170
# (a host op by default; no "allreduce"-like substring), my_h2d 172-174 (a host op by default),
# sgd 175-190.
# Automatic: FP = conv2d's start (30, after_data), BP = sgd's end (190, last_op).
RECORDS = [
    span(DATA, 0, 20),
    span("aten::conv2d", 30, 70),
    span("aten::linear", 110, 20),
    span("aten::relu", 135, 10),
    span("my_gradsync", 150, 20),
    span("my_h2d", 172, 2),
    span("aten::sgd", 175, 15),
    {"type": "step", "step": 1, "begin_us": T0, "end_us": T0 + 200, "samples": 8},
]
OPS = {DATA, "aten::conv2d", "aten::linear", "aten::relu", "my_gradsync", "my_h2d", "aten::sgd"}


def base(d, job):
    return "/api/v1/jobs/%d" % d.job(job)["id"]


def feed(d, job, env=None):
    c = Client(d.socket)
    if env is None:
        c.hello(job)
    else:
        c.hello(job, env=env)
    c.send_lines(RECORDS)
    c.wait_ack(len(RECORDS))
    d.wait_for(job + " steps", lambda: d.get_json(base(d, job) + "/steps")["total"] == 1
               and d.get_json(base(d, job) + "/steps")["rows"][0]["source"] == "trace")
    return c


def points(d, job):
    """(fp_start, fp_origin, bp_end, bp_origin, interval, fp_bp, tail) from /step-trace?step=1,
    checked against /steps."""
    one = d.get_json(base(d, job) + "/step-trace?step=1")
    p = one["points"]
    row = d.get_json(base(d, job) + "/steps")["rows"][0]
    assert (row["fp_start"], row["bp_end"]) == (p["fp_start"], p["bp_end"])
    assert (row["interval_us"], row["fp_bp_us"], row["tail_us"]) == (
        one["interval_us"], one["fp_bp_us"], one["tail_us"])
    assert one["interval_us"] + one["fp_bp_us"] + one["tail_us"] == 200
    return (p["fp_start"], p["fp_origin"], p["bp_end"], p["bp_origin"],
            one["interval_us"], one["fp_bp_us"], one["tail_us"])


AUTO = ("aten::conv2d", "after_data", "aten::sgd", "last_op", 30, 160, 10)


def test_hello_env_overrides(daemons):
    d = daemons("h")
    cs = [feed(d, "auto"),
          feed(d, "ms", {"FP_POINT": "aten::linear", "OTHER": 1}),
          feed(d, "prof", {"FP_POINT": "aten::linear", "PROFILING_FP_START": "aten::relu",
                           "PROFILING_BP_END": "aten::relu"}),
          feed(d, "ss", {"STEPSCOPE_FP_POINT": "aten::conv2d", "PROFILING_FP_START": "aten::relu",
                         "BP_POINT": "aten::linear"}),
          feed(d, "miss", {"FP_POINT": "nosuch", "BP_POINT": 7})]
    try:
        assert points(d, "auto") == AUTO
        # FP at linear's start (110): interval 110, fp_bp 190 - 110.
        assert points(d, "ms") == ("aten::linear", "env_mindspore", "aten::sgd", "last_op",
                                   110, 80, 10)
        # PROFILING_* beat FP_POINT: relu 135-145.
        assert points(d, "prof") == ("aten::relu", "env_profiling", "aten::relu",
                                     "env_profiling", 135, 10, 55)
        # STEPSCOPE_* beat PROFILING_*; BP at linear's end (130).
        assert points(d, "ss") == ("aten::conv2d", "env_stepscope", "aten::linear",
                                   "env_mindspore", 30, 100, 70)
        # A name no span has falls back to the automatic point; a non-string is ignored.
        assert points(d, "miss") == AUTO
    finally:
        for c in cs:
            c.close()


def test_daemon_fp_point_loses_to_the_jobs_env(daemons):
    d = daemons("c", args=["--fp-point", "aten::relu"])
    cs = [feed(d, "plain"), feed(d, "ms", {"FP_POINT": "aten::linear"})]
    try:
        assert points(d, "plain") == ("aten::relu", "config", "aten::sgd", "last_op", 135, 55, 10)
        assert points(d, "ms") == ("aten::linear", "env_mindspore", "aten::sgd", "last_op",
                                   110, 80, 10)
    finally:
        for c in cs:
            c.close()
    d.stop()
    # The daemon's environment (STEPSCOPE_BP_POINT) and its config file feed the same options.
    e = daemons("e", env=dict(d.env, STEPSCOPE_BP_POINT="aten::relu"),
                config="fp_point = aten::relu\n")
    c = feed(e, "plain")
    try:
        assert points(e, "plain") == ("aten::relu", "config", "aten::relu", "config", 135, 10, 55)
    finally:
        c.close()


def test_role_rules_move_bp_and_operators(daemons, tmp):
    rules = tmp / "roles.conf"
    rules.write_text("# custom collective and copy\nrole = communication  prefix = my_gradsync\n"
                     "role = memcpy name = my_h2d\n")
    d = daemons("r", args=["--role-rules", str(rules)])
    c = feed(d, "roles")
    try:
        # my_gradsync is now a communication op: BP = the last operator starting before it
        # (relu, ends 145). my_h2d is a memcpy: not a host role, so /operators drops it.
        assert points(d, "roles") == ("aten::conv2d", "after_data", "aten::relu", "before_comm",
                                      30, 115, 55)
        d.wait_for("ops", lambda: d.get_json(base(d, "roles") + "/operators")["total"] > 0)
        names = {r["name"] for r in d.get_json(base(d, "roles") + "/operators")["rows"]}
        assert names == OPS - {"my_h2d"}
    finally:
        c.close()
    e = daemons("n")
    c = feed(e, "roles")
    try:
        assert points(e, "roles") == AUTO
        names = {r["name"] for r in e.get_json(base(e, "roles") + "/operators")["rows"]}
        assert names == OPS
    finally:
        c.close()


def test_bad_role_rules_file(daemons, tmp):
    bad = tmp / "bad_roles.conf"
    bad.write_text("role = forward prefix = fwd\n\nrole = nonsense prefix = x\n")
    b = daemons("b", start=False, args=["--role-rules", str(bad)])
    p = b.run_to_exit()
    assert p.returncode == 2
    assert b"line 3" in p.stderr and str(bad).encode() in p.stderr
    m = daemons("m", start=False, config="role_rules = %s\n" % (tmp / "nope.conf"))
    p = m.run_to_exit()
    assert p.returncode == 2 and b"nope.conf" in p.stderr


def test_hello_env_survives_restart(daemons):
    """The points a job's hello env chose are replayed at start-up (sessions keep their hello):
    after kill -9 and after a clean stop the steps still use the overridden points, with their
    origin, and of two hellos of one job the later one's value still wins."""
    d = daemons("rs")
    cs = [feed(d, "auto"),
          feed(d, "ss", {"STEPSCOPE_FP_POINT": "aten::conv2d", "PROFILING_FP_START": "aten::relu",
                         "BP_POINT": "aten::linear"}),
          feed(d, "prof", {"PROFILING_FP_START": "aten::relu", "PROFILING_BP_END": "aten::relu"})]
    # A second session of job "prof" moves FP again; BP keeps the first hello's value.
    later = Client(d.socket)
    later.hello("prof", env={"PROFILING_FP_START": "aten::linear"})
    later.send_lines([])
    cs.append(later)
    SS = ("aten::conv2d", "env_stepscope", "aten::linear", "env_mindspore", 30, 100, 70)
    PROF = ("aten::linear", "env_profiling", "aten::relu", "env_profiling", 110, 35, 55)
    d.wait_for("prof moved", lambda: points(d, "prof") == PROF)
    before = {job: points(d, job) for job in ("auto", "ss", "prof")}
    assert before == {"auto": AUTO, "ss": SS, "prof": PROF}
    for c in cs:
        c.close()
    for how in ("kill9", "stop"):
        if how == "stop":
            d.stop()
        d.restart()
        for job in ("auto", "ss", "prof"):
            d.wait_for(job + " replayed", lambda job=job: points(d, job) == before[job])
