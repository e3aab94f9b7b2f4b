# SPDX-License-Identifier: MIT
"""Thousands of small jobs (issue 18, items 3 and 4). Each job was charged ~337 KB of live memory
even with one event (the capacity of its first breakdown chunk), so the 1 GiB budget filled at
~3 200 jobs, and from then on every publish ran an eviction that scanned every job and, for each,
every published snapshot, on the loop: hello->ack took 1.4-2 s, over 5 s at 8 800 jobs. Then a
job was charged the pages it touched (13 KB) and an eviction sorted every job per call, evicting
all it had to at once, each eviction scanning live's lists: near the job cap (57 344 of 65 536
jobs in memory) hello->ack went back to 0.6 s (p99 of the last tenth, 65 000 jobs). Now a
job's breakdown chunk starts at 64 spans and grows, live's lists are found through hash indexes,
and eviction walks an LRU list, a bounded step per loop turn.

Past LIVE_JOBS_MAX (4096) jobs got no live analysis, silently (item 4): then ended jobs past 7/8
of live_max_jobs (default 65536, at most 65536: arrays of that size) were evicted like those over
the byte budget, and a job refused because every tracked one is still streaming is counted and
its live routes say so (503 untracked); now live_max_jobs goes up to 16 777 216 (no array has a
fixed size).

CI runs 10 000 jobs; the long variant RELIABILITY_SCALE=6.5 (65 000 jobs) shows the cap's
eviction pressure: `RELIABILITY_SCALE=6.5 pytest tests/reliability/test_many_jobs.py -k charged`
(tests/bench/many_jobs.py prints the same figures for two builds side by side)."""
import statistics
import threading
import time

from relutil import SCALE, rss_kib
from ssclient import Client

JOBS = int(10000 * SCALE)
WORKERS = 32
PROBES = 200  # jobs sent one at a time once the others are in: the latency at the end
T0 = 1700000000000000
ONE_EVENT = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": T0,
              "dur": 100}]
# A step record and two operators inside it.
FEW_RECORDS = [{"type": "step", "step": 1, "begin_us": T0, "end_us": T0 + 1000}, ONE_EVENT[0],
               {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                "ts": T0 + 300, "dur": 50}]


def _sanitized(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def one_job(sock, name, records=ONE_EVENT):
    """A job on its own connection: hello, its records, and the ack of the last, in seconds."""
    with Client(sock, timeout=60) as c:
        t0 = time.monotonic()
        c.hello(name, rank=0, world_size=1)
        c.send_lines(records)
        c.wait_ack(len(records))
        return time.monotonic() - t0


def many_jobs(d, n, first=0, records=ONE_EVENT):
    """n jobs (small-{first}...) from WORKERS concurrent clients; returns their hello->ack
    latencies, by job index."""
    lat = [None] * n
    errors = []
    lock = threading.Lock()
    nxt = [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= n:
                return
            try:
                lat[i] = one_job(d.socket, f"small-{first + i}", records)
            except Exception as e:  # noqa: BLE001  (reported below)
                with lock:
                    errors.append(repr(e))
                return

    threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert None not in lat
    return lat


def _figures(lat):
    s = sorted(lat)
    return {"median_s": round(statistics.median(s), 4), "p99_s": round(s[int(len(s) * 0.99)], 4),
            "worst_s": round(s[-1], 4)}


def test_small_jobs_are_charged_what_they_hold(daemons, figures):
    """JOBS jobs of a step record and two operators under the default 1 GiB budget, then PROBES
    one at a time: hello->ack stays in tens of ms throughout and at the end (it took seconds past
    ~3 200 jobs, and 0.6 s near the job cap), the jobs fit the budget (~12 KB each), and every
    job is analysed live, those past the old 4096 cap too."""
    d = daemons()
    # The whole run shares the machine with WORKERS clients starting at once; the probes, one
    # at a time at the end, are the figure the issue names (tens of ms).
    bound, end_bound = (1.5, 1.5) if _sanitized(d.proc.pid) else (0.5, 0.25)
    t0 = time.monotonic()
    lat = many_jobs(d, JOBS, records=FEW_RECORDS)
    wall = time.monotonic() - t0
    probes = [one_job(d.socket, f"probe-{i}", FEW_RECORDS) for i in range(PROBES)]
    st = d.stats()
    per_job = st["live"]["bytes"] / (JOBS + PROBES)
    f = _figures(lat)
    last, end = _figures(lat[-(JOBS // 10):]), _figures(probes)
    figures(jobs=JOBS, wall_s=round(wall, 2), live_bytes=st["live"]["bytes"],
            live_bytes_per_job=round(per_job), evictions=st["live"]["evictions"],
            rss_mib=round(rss_kib(d.proc.pid) / 1024), last_tenth=last, probes=end, **f)
    assert per_job < 32 * 1024, f"a job of 3 records is charged {per_job:.0f} bytes"
    assert st["live"]["untracked_jobs"] == 0
    if JOBS < 57344:  # 7/8 of live_max_jobs: past it, ended jobs are evicted
        assert st["live"]["evictions"] == 0
    assert f["worst_s"] < bound, f
    assert end["worst_s"] < end_bound, end
    for i in (0, 4095, 4096, 4097, JOBS - 1):
        job = d.job(f"small-{i}")
        steps = d.get_json(f"/api/v1/jobs/{job['id']}/steps")
        assert steps["total"] == 1 and steps["rows"][0]["step"] == 1, (i, steps)
        assert d.get_json(f"/api/v1/jobs/{job['id']}/operators")["total"] == 2, i


def test_eviction_under_a_small_budget_does_not_stall_ingest(daemons, figures):
    """The same under a 16 MiB budget: jobs are evicted all along (about a thousand stay in
    memory), and hello->ack stays bounded; the budget holds."""
    budget = 16 << 20
    d = daemons(config=f"live_max_bytes = {budget}\n")
    bound = 1.5 if _sanitized(d.proc.pid) else 0.5
    lat = many_jobs(d, JOBS)
    time.sleep(2.5)  # past the eviction grace, so the last jobs may go too
    st = d.wait_for("live memory back under the budget",
                    lambda: (lambda s: s if s["live"]["bytes"] <= budget else None)(d.stats()),
                    timeout=10)
    f = _figures(lat)
    figures(jobs=JOBS, budget_mib=16, live_bytes=st["live"]["bytes"],
            evictions=st["live"]["evictions"], **f)
    assert st["live"]["evictions"] > JOBS // 2
    assert f["worst_s"] < bound, f
    # An evicted job still answers (reloaded from the store).
    first = d.job("small-0")
    assert d.get_json(f"/api/v1/jobs/{first['id']}/operators")["total"] == 1


def test_ended_jobs_past_live_max_jobs_are_evicted_not_refused(daemons):
    """live_max_jobs = 64: 56 one-event jobs, then two waves of 8 once the first ones are past
    the 2 s eviction grace: the ended jobs are evicted down to 56 (7/8) between the waves, so
    all 72 are analysed (the first from a reload), none refused. A burst of more than 1/8 of
    live_max_jobs new jobs within the grace is refused past the cap (next test)."""
    d = daemons(config="live_max_jobs = 64\n")
    n = 0
    for wave in (56, 8, 8):
        names = [f"small-{n + i}" for i in range(wave)]
        for name in names:
            one_job(d.socket, name)
        n += wave
        time.sleep(2.3)
    st = d.stats()
    assert st["live"]["untracked_jobs"] == 0, st["live"]
    assert st["live"]["evictions"] >= n - 64, st["live"]
    for i in (0, 60, n - 1):
        job = d.job(f"small-{i}")
        assert d.get_json(f"/api/v1/jobs/{job['id']}/operators")["total"] == 1, i


def test_jobs_past_live_max_jobs_while_all_stream_are_refused_and_say_so(daemons):
    """10 jobs streaming at once with live_max_jobs = 8: the two that came last are refused live
    analysis, counted in /api/v1/stats live.untracked_jobs, and their live routes answer 503
    untracked (they answered an empty 200 before); their records are stored, the summaries
    read them, and the 8 others are analysed."""
    d = daemons(config="live_max_jobs = 8\n")
    clients = []
    try:
        for i in range(10):
            c = Client(d.socket, timeout=30)
            clients.append(c)
            c.hello(f"open-{i}", rank=0, world_size=1)
            c.send_lines([{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                           "ts": 1700000000000000, "dur": 100}])
            c.wait_ack(1)
        d.wait_for("refusals counted", lambda: d.stats()["live"]["untracked_jobs"] == 2)
        for i in (8, 9):
            job = d.job(f"open-{i}")
            assert job["events"] == 1
            for route in ("steps", "operators"):
                st, _, body = d.request(f"/api/v1/jobs/{job['id']}/{route}")
                assert st == 503 and b'"untracked"' in body and b"live_max_jobs" in body, body
        first = d.job("open-0")
        d.wait_for("job 0 analysed",
                   lambda: d.get_json(f"/api/v1/jobs/{first['id']}/operators")["total"] == 1)
        last = d.job("open-9")
        tl = d.get_json(f"/api/v1/jobs/{last['id']}/timeline")
        assert [e["name"] for e in tl["traceEvents"] if e.get("ph") == "X"] == ["aten::mm"]
    finally:
        for c in clients:
            c.close()


def test_live_max_jobs_has_no_fixed_ceiling(daemons):
    """live_max_jobs = 100 000 is taken (the cap had a ceiling of 65 536, the size of the arrays
    the event stream, main.c and the cluster shipper passed live_query_changed(), and a larger
    value was refused): 1 000 jobs, every one analysed live and named by the event stream."""
    d = daemons(config="live_max_jobs = 100000\n")
    n = int(1000 * SCALE)
    many_jobs(d, n, records=FEW_RECORDS)
    st = d.stats()["live"]
    assert st["untracked_jobs"] == 0 and st["evictions"] == 0, st
    for i in (0, n - 1):
        job = d.job(f"small-{i}")  # acked once stored; published within 100 ms
        d.wait_for(f"job {i} analysed",
                   lambda: d.get_json(f"/api/v1/jobs/{job['id']}/steps")["total"] == 1)
