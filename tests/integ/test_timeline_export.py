# SPDX-License-Identifier: MIT
"""Timeline export (/api/v1/jobs/{job}/timeline): ranks, step and time windows select exactly the
events they should; the byte cap cuts a valid document and says what it cut; the answer is
streamed (chunked) and the daemon's memory does not grow with the export."""
import http.client
import json
import time

from conftest import clean_env
from ssclient import Client

T0 = 1700000000000000  # µs; every time below is a whole µs, so float parsing is exact
SYNTH = ("process_name", "process_sort_index")  # the metadata the export adds


def _key(e):
    return json.dumps(e, sort_keys=True)


def _rank_events(rank, pid):
    """Spans around the two steps of the rank (step 1: [b, b+100], step 2: [b+100, b+200])."""
    b = T0 + rank * 10
    tid = 7 + rank
    evs = [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
            "args": {"name": f"worker {rank}"}}]
    # (offset, dur) pairs: inside step 1, straddling 1|2, inside step 2, after, touching ends.
    for i, (off, dur) in enumerate([(5, 10), (90, 20), (150, 10), (250, 5), (200, 0), (-3, 3),
                                    (100, 0), (40, 200)]):
        evs.append({"ph": "X", "name": f"op{i}", "cat": "cpu_op", "ts": b + off, "dur": dur,
                    "pid": pid, "tid": tid, "args": {"ts": 1, "dur": 999999999, "r": rank}})
    evs.append({"ph": "i", "name": "mark", "s": "t", "ts": b + 120, "pid": pid, "tid": tid})
    steps = [{"type": "step", "step": 1, "begin_us": b, "end_us": b + 100, "samples": 8},
             {"type": "step", "step": 2, "begin_us": b + 100, "end_us": b + 200, "samples": 8}]
    return evs, steps


def _in_window(e, t0, t1):
    if "ts" not in e:
        return True
    return e["ts"] <= t1 and e["ts"] + e.get("dur", 0) >= t0


def _send_job(daemon, name, pids=(100, 101)):
    sent = {}
    for rank, pid in enumerate(pids):
        evs, steps = _rank_events(rank, pid)
        with Client(daemon.socket) as c:
            c.hello(name, rank=rank, world_size=len(pids))
            c.send_lines(evs + steps)
            c.wait_ack(len(evs) + len(steps))
            assert c.errors == []
        sent[rank] = evs
    return sent


def _export(daemon, job, query=""):
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job}/timeline{query}")
    assert st == 200, body[:300]
    doc = json.loads(body)
    return doc, hdr, body


def _own(doc):
    return [e for e in doc["traceEvents"] if e.get("name") not in SYNTH]


def _same(got, want):
    assert sorted(map(_key, got)) == sorted(map(_key, want))


def test_export_ranks_step_and_window(daemon):
    sent = _send_job(daemon, "tl")
    job = daemon.job("tl")["id"]

    doc, hdr, body = _export(daemon, job)
    _same(_own(doc), sent[0] + sent[1])
    od = doc["otherData"]
    assert od["ranks"] == [0, 1] and od["events"] == len(sent[0]) + len(sent[1])
    assert od["truncated"] is False and od["cut_events"] == 0
    assert od["remapped_pids"] == 0 and od["shared_pids"] == 0
    assert od["max_bytes"] == 20971520 and od["step"] is None
    # Each rank is named as a process through its own pid, sorted by rank.
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e.get("name") == "process_name"}
    assert names == {100: "rank 0", 101: "rank 1"}
    assert list(doc)[-1] == "otherData"  # written after traceEvents, once the counts are known

    doc, _, _ = _export(daemon, job, "?ranks=1")
    _same(_own(doc), sent[1])
    assert doc["otherData"]["ranks"] == [1]
    doc, _, _ = _export(daemon, job, "?ranks=1,0")
    _same(_own(doc), sent[0] + sent[1])

    # A step: each rank's own window of that step (rank 1's steps are 10 µs later).
    for step in (1, 2):
        doc, _, _ = _export(daemon, job, f"?step={step}")
        want = []
        for rank in (0, 1):
            b = T0 + rank * 10 + (step - 1) * 100
            want += [e for e in sent[rank] if _in_window(e, b, b + 100)]
        _same(_own(doc), want)
        od = doc["otherData"]
        assert od["step"] == step
        assert od["windows"] == [{"rank": r, "start_us": T0 + r * 10 + (step - 1) * 100,
                                  "end_us": T0 + r * 10 + step * 100} for r in (0, 1)]
    doc, _, _ = _export(daemon, job, "?step=2&ranks=0")
    _same(_own(doc), [e for e in sent[0] if _in_window(e, T0 + 100, T0 + 200)])

    # A time window: exact per event (ts/dur overlap), not per stored block.
    for t0, t1 in ((T0 + 95, T0 + 95), (T0 + 16, T0 + 89), (T0 + 300, T0 + 400),
                   (T0 - 3, T0 - 3), (T0 + 111, T0 + 150)):
        doc, _, _ = _export(daemon, job, f"?start_us={t0}&end_us={t1}")
        _same(_own(doc), [e for r in (0, 1) for e in sent[r] if _in_window(e, t0, t1)])
        assert doc["otherData"]["start_us"] == t0 and doc["otherData"]["end_us"] == t1


def test_export_bad_parameters(daemon):
    _send_job(daemon, "tlbad")
    job = daemon.job("tlbad")["id"]
    for q, name in (("?ranks=0,,1", "ranks"), ("?ranks=a", "ranks"), ("?step=-1", "step"),
                    ("?step=1&start_us=1", "step"), ("?max_bytes=100", "max_bytes"),
                    ("?max_bytes=67108865", "max_bytes"), ("?start_us=5&end_us=4", "end_us"),
                    ("?rank=0&ranks=1", "rank")):
        st, _, body = daemon.request(f"/api/v1/jobs/{job}/timeline{q}")
        assert st == 400, (q, body)
        assert json.loads(body)["error"]["message"].startswith(name + ":"), (q, body)
    st, _, body = daemon.request(f"/api/v1/jobs/{job}/timeline?ranks=0,5")
    assert st == 404 and b"no rank 5" in body
    st, _, body = daemon.request(f"/api/v1/jobs/{job}/timeline?step=99")
    assert st == 404 and b"no step 99" in body


def test_export_cap_cuts_a_valid_document(daemon):
    sent = _send_job(daemon, "tlcap")
    # More events, so that the cap cuts somewhere in the middle.
    many = [{"ph": "X", "name": f"k{i}", "ts": T0 + 1000 + i, "dur": 1, "pid": 100, "tid": 1}
            for i in range(300)]
    with Client(daemon.socket) as c:
        c.hello("tlcap", rank=0, world_size=2)
        c.send_lines(many)
        c.wait_ack(len(many))
    total = len(sent[0]) + len(sent[1]) + len(many)
    job = daemon.job("tlcap")["id"]
    for cap in (4096, 5000, 9999, 20000):
        doc, _, body = _export(daemon, job, f"?max_bytes={cap}")
        # The slack is zero: the tail's room is reserved at its longest, so never above the cap.
        assert len(body) <= cap, (cap, len(body))
        od = doc["otherData"]
        assert od["truncated"] is True and od["max_bytes"] == cap
        assert od["events"] == len(_own(doc)) and od["events"] > 0
        assert od["events"] + od["cut_events"] == total
        # The events kept are the first ones of the selection, whole.
        assert all(_key(e) in set(map(_key, sent[0] + sent[1] + many)) for e in _own(doc))
    doc, _, _ = _export(daemon, job, "?limit=3")
    assert doc["otherData"]["events"] == 3 and doc["otherData"]["cut_events"] == total - 3


def test_export_same_pid_on_two_ranks(daemon):
    sent = _send_job(daemon, "tlpid", pids=(1, 1))
    job = daemon.job("tlpid")["id"]
    # By default verbatim: the ranks share a process, and otherData says so.
    doc, _, _ = _export(daemon, job)
    assert doc["otherData"]["shared_pids"] == 1 and doc["otherData"]["remapped_pids"] == 0
    _same(_own(doc), sent[0] + sent[1])
    # remap_pids=1 keeps them apart: the later rank's pid becomes "rank 1 1".
    doc, _, _ = _export(daemon, job, "?remap_pids=1")
    assert doc["otherData"]["remapped_pids"] == 1 and doc["otherData"]["shared_pids"] == 0
    names = {json.dumps(e["pid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e.get("name") == "process_name"}
    assert names == {"1": "rank 0", '"rank 1 1"': "rank 1"}
    want = sent[0] + [dict(e, pid="rank 1 1") for e in sent[1]]
    _same(_own(doc), want)


def test_export_hostile_job_name(daemon):
    name = 'evil "job" </script><b>\\ \u2713 \u2028'
    _send_job(daemon, name)
    job = daemon.job(name)["id"]
    doc, hdr, body = _export(daemon, job)
    assert doc["otherData"]["job"] == name
    assert hdr["content-disposition"] == f'attachment; filename="{job}.trace.json"'
    assert b"</script>" not in body


def _vm_hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_export_streams_with_bounded_memory(daemons, tmp):
    # Under AddressSanitizer freed blocks wait in a quarantine (256 MB by default) instead of
    # being reused, so the high-water mark would grow with every block the export decompresses;
    # a small quarantine keeps reuse close to a normal build's without turning ASan off.
    env = clean_env(tmp)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "quarantine_size_mb=4"]))
    d = daemons("tlbig", env=env)
    pad = "x" * 120
    n = 260000  # ~200 bytes a line: ~52 MB of events
    with Client(d.socket) as c:
        c.hello("tlbig", rank=0)
        batch = []
        for i in range(n):
            batch.append({"ph": "X", "name": f"op{i % 97}", "cat": "kernel", "ts": T0 + i,
                          "dur": 1, "pid": 1, "tid": i % 8, "args": {"pad": pad}})
            if len(batch) == 20000:
                c.send_lines(batch)
                batch = []
        c.send_lines(batch)
        c.wait_ack(n, timeout=120)
    job = d.job("tlbig")["id"]
    time.sleep(0.2)
    before = _vm_hwm_kb(d.proc.pid)
    conn = http.client.HTTPConnection(d.host, d.port, timeout=120)
    conn.request("GET", f"/api/v1/jobs/{job}/timeline?max_bytes=62914560")
    r = conn.getresponse()
    assert r.status == 200
    assert r.getheader("Transfer-Encoding") == "chunked" or r.getheader("Content-Length") is None
    body = bytearray()
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        body += chunk
    conn.close()
    after = _vm_hwm_kb(d.proc.pid)
    doc = json.loads(body)
    assert doc["otherData"]["events"] == n and doc["otherData"]["truncated"] is False
    assert len(body) > 50_000_000
    grown = (after - before) * 1024
    print(f"export {len(body)} bytes; daemon VmHWM {before} kB -> {after} kB (+{grown} bytes)")
    # A buffered answer would need the whole document (50 MB); streaming needs one block and
    # one chunk. Allow 8 MB for allocator noise and the first read connection's page cache.
    assert grown < 8 * 1024 * 1024, grown

    # A download given up half way frees everything: the daemon keeps answering.
    conn = http.client.HTTPConnection(d.host, d.port, timeout=30)
    conn.request("GET", f"/api/v1/jobs/{job}/timeline?max_bytes=62914560")
    r = conn.getresponse()
    assert len(r.read(1 << 20)) == 1 << 20
    conn.sock.close()
    conn.close()
    assert d.get_json("/api/v1/health")
    assert d.proc.poll() is None
