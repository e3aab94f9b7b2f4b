# SPDX-License-Identifier: MIT
"""One damaged block in an otherwise valid store (issue 18, item 5). A timeline block whose
compressed data, codec or raw size is wrong made start-up exit 4 ("replaying the store into live
analysis: Input/output error", no job or block named), so every job was down. Now the store skips
that block (its own events only), logs its job, rank and id, and lists it in /api/v1/stats
(store.damaged) and in the job's answer (damaged_blocks, damaged_block_ids); every other job,
and the damaged job's other blocks, are served.

Three more kinds got past that fix: a raw size so large its buffer could not be made (start-up
exit 4 again, "Cannot allocate memory"), a compressed block marked as stored uncompressed, and one
flipped bit that still decodes (both served as lines: the timeline's JSON broke, nothing named).
The raw size is now checked against the frame's own before any buffer is made, an uncompressed
block's against its length, and each frame carries a checksum of its lines."""
import os
import sqlite3

import pytest

from ssclient import Client

T0 = 1000000  # us


def _span(name, ts, dur):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": T0 + ts,
            "dur": dur}


def _feed(d, job, rank):
    recs = [_span("aten::conv2d", 30, 100), _span("aten::sgd", 150, 30),
            {"type": "step", "step": 1, "begin_us": T0, "end_us": T0 + 200, "samples": 32}]
    with Client(d.socket) as c:
        c.hello(job, rank=rank, world_size=2, stream=f"{job}-{rank}")
        c.send_lines(recs)
        assert c.wait_ack(len(recs)) == len(recs)


def _flip_one_bit(con, block):
    """One bit flipped in the middle of the block's zstd frame, which then still decodes: only
    the frame's checksum (written since) tells its lines were altered. Before, they were served
    as stored, and the timeline's JSON broke."""
    codec, data = con.execute("SELECT codec, data FROM blocks WHERE id = ?", (block,)).fetchone()
    assert codec == 1, "the block is not compressed: nothing to flip in a frame"
    data = bytearray(data)
    data[len(data) // 2] ^= 0x20
    con.execute("UPDATE blocks SET data = ? WHERE id = ?", (bytes(data), block))


DAMAGE = {
    "data": "UPDATE blocks SET data = x'28b52ffd00deadbeef' WHERE id = ?",
    "data_bit_flip": _flip_one_bit,
    "codec": "UPDATE blocks SET codec = 77 WHERE id = ?",
    # a compressed block said to be stored as it is: its frame was served as lines
    "codec_none": "UPDATE blocks SET codec = 0 WHERE id = ?",
    "raw_size": "UPDATE blocks SET raw_bytes = raw_bytes + 1 WHERE id = ?",
    # 1 TiB: the buffer for it could not be made, and start-up exited 4 "Cannot allocate memory"
    "raw_size_huge": "UPDATE blocks SET raw_bytes = 1099511627776 WHERE id = ?",
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_one_damaged_block_keeps_the_others_up(daemons, kind):
    d = daemons()
    for job in ("good", "bad"):
        for rank in (0, 1):
            _feed(d, job, rank)
    d.wait_for("both jobs stored",
               lambda: d.job("good")["events"] == 4 and d.job("bad")["events"] == 4)
    bad_id = d.job("bad")["id"]
    d.stop()
    con = sqlite3.connect(os.path.join(d.data_dir, "stepscope.db"))
    block, = con.execute("SELECT id FROM blocks WHERE job_id = ? AND rank = 0",
                         (bad_id,)).fetchone()
    if callable(DAMAGE[kind]):
        DAMAGE[kind](con, block)
    else:
        con.execute(DAMAGE[kind], (block,))
    con.commit()
    con.close()

    d.start()  # used to exit 4 here
    d.assert_alive()
    store = d.stats()["store"]
    assert store["damaged_blocks"] == 1
    assert store["damaged"] == [{"job_id": bad_id, "rank": 0, "block": block}]
    job = d.job("bad")
    assert job["damaged_blocks"] == 1 and job["damaged_block_ids"] == [block]
    assert d.get_json(f"/api/v1/jobs/{bad_id}")["damaged_block_ids"] == [block]
    assert d.job("good")["damaged_blocks"] == 0
    assert f"job {bad_id} rank 0 block {block} is damaged" in d.stderr()
    # Every other job is served whole, and the damaged job's other rank too.
    good = d.get_json(f"/api/v1/jobs/{d.job('good')['id']}/operators")
    assert good["total"] == 2
    tl = d.get_json(f"/api/v1/jobs/{bad_id}/timeline")
    xs = [e for e in tl["traceEvents"] if e.get("ph") == "X"]
    assert len(xs) == 2 and {e["name"] for e in xs} == {"aten::conv2d", "aten::sgd"}
    steps = d.get_json(f"/api/v1/jobs/{bad_id}/steps")
    assert steps["total"] >= 1
