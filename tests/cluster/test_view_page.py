# SPDX-License-Identifier: MIT
"""The Cluster page's Hosts card (docs/DASHBOARD.md) on a real cluster view: three node daemons
ship to Debian's clickhouse-server 18.16, nodeB's trainers 37 ms late and nodeC's 20 ms early
(test_view_clocks.py's hosts); nodeC's daemon is stopped (SIGSTOP) after 20 steps while the
others ship 40. The viewer's page, in Debian's chromium (tests/e2e/cluster_hosts.mjs), shows one
row per host and node with what the job's JSON says: nodeC 20 steps behind (badged), hostB's
and nodeC's clock offsets within their spread; a screenshot goes to
$BUILD_DIR/e2e-screenshots/cluster-hosts-clickhouse.png."""
import os
import random
import signal
import subprocess

from ssclient import Client
from test_cluster import creds_file, node_args, wait_shipped
from test_clocks import SHIFT_US, rank_records

# (node, host in the hellos, shift); nodeC's hellos name no host.
NODES = [("nodeA", "hostA", 0), ("nodeB", "hostB", SHIFT_US), ("nodeC", "", -20000)]
PER_NODE = 2
STEPS = 40
FIRST = 20  # steps every node ships before nodeC stops
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
E2E = os.path.join(ROOT, "tests", "e2e")


def send(d, job, rank, host, lines):
    with Client(d.socket) as c:
        c.hello(job, rank=rank, world_size=PER_NODE * len(NODES), host=host)
        c.send_lines(lines)
        c.wait_ack(len(lines))
        assert c.errors == []


def playwright():
    """tests/e2e's playwright-core (pinned in its package-lock.json, no browser download), as
    tests/e2e/run installs it."""
    if not os.path.exists(os.path.join(E2E, "node_modules", ".package-lock.json")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=E2E, check=True,
                       env={**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"})


def test_hosts_card_shows_each_nodes_lag_and_clock(ch, daemons, tmp):
    playwright()
    creds = creds_file(tmp)
    rng = random.Random(16)
    nodes, later = [], {}
    for k, (name, host, shift) in enumerate(NODES):
        d = daemons(name, args=node_args(ch, name, creds))
        nodes.append(d)
        for r in range(k * PER_NODE, (k + 1) * PER_NODE):
            evs, recs = rank_records(r, shift, STEPS, rng)  # 2 events per step
            send(d, "hosts", r, host, evs[:2 * FIRST] + recs[:FIRST])
            later[r] = evs[2 * FIRST:] + recs[FIRST:]
    for d in nodes:
        wait_shipped(d)
    viewer, stopped = nodes[0], nodes[2]
    viewer.wait_for("every node's ranks", lambda: viewer.get_json("/api/v1/jobs/hosts")["ranks"] == 6,
                    timeout=90)
    stopped.proc.send_signal(signal.SIGSTOP)
    try:
        for k in (0, 1):
            for r in range(k * PER_NODE, (k + 1) * PER_NODE):
                send(nodes[k], "hosts", r, NODES[k][1], later[r])
        want = {"nodeA": (STEPS, 0), "nodeB": (STEPS, 0), "nodeC": (FIRST, STEPS - FIRST)}

        def ready():
            j = viewer.get_json("/api/v1/jobs/hosts")
            v = j.get("cluster_view")
            hosts = {h["host"]: h for h in (j["clocks"] or {"hosts": []})["hosts"]}
            return (v and {n["node"]: (n["last_step"], n["steps_behind"]) for n in v["nodes"]} == want
                    and hosts.get("hostB", {}).get("steps") == STEPS and j)
        j = viewer.wait_for("nodeC 20 steps behind", ready, timeout=90)
        assert j["cluster_view"]["step_window"] == FIRST
        hosts = {h["host"]: h for h in j["clocks"]["hosts"]}
        assert hosts["hostB"]["aligned"] and hosts["nodeC"]["aligned"], hosts
        shots = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"), "e2e-screenshots")
        os.makedirs(shots, exist_ok=True)
        out = subprocess.run(["node", os.path.join(E2E, "cluster_hosts.mjs"), viewer.url.rstrip("/"),
                              str(j["id"]), os.path.join(shots, "cluster-hosts-clickhouse.png")],
                             cwd=E2E, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr + out.stdout
    finally:
        stopped.proc.send_signal(signal.SIGCONT)
