# SPDX-License-Identifier: MIT
"""Debian's clickhouse-server (18.16) as a plain user-level process for the cluster tests: its own
config, users and data dir under a temp dir, listening on free loopback ports. Users: `default`
(no password), `ship` (password s3cret) and `reader` (a read-only profile: every INSERT is
refused with Code 164, the "refused insert" of tests/cluster/test_cluster.py)."""
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER = shutil.which("clickhouse-server") or "/usr/sbin/clickhouse-server"
CLIENT = shutil.which("clickhouse-client") or "/usr/bin/clickhouse-client"

CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/log/server.log</log><errorlog>{d}/log/err.log</errorlog></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>64</max_concurrent_queries>
</yandex>
"""

USERS = """<?xml version="1.0"?>
<yandex>
  <profiles>
    <default><max_memory_usage>4000000000</max_memory_usage></default>
    <ro><readonly>1</readonly></ro>
  </profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
    <ship><password>s3cret</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></ship>
    <reader><password>r</password><networks><ip>127.0.0.1</ip></networks><profile>ro</profile><quota>default</quota></reader>
  </users>
  <quotas><default></default></quotas>
</yandex>
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ClickHouse:
    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.http_port = free_port()
        self.tcp_port = free_port()
        self.proc = None
        for sub in ("log", "data", "tmp", "user_files", "format_schemas"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "config.xml").write_text(
            CONFIG.format(d=self.root, http=self.http_port, tcp=self.tcp_port))
        (self.root / "users.xml").write_text(USERS)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.http_port}/"

    def start(self, timeout=60):
        assert os.path.exists(SERVER), "clickhouse-server is not installed (scripts/deps test)"
        self.proc = subprocess.Popen([SERVER, f"--config-file={self.root / 'config.xml'}"],
                                     stdout=open(self.root / "log" / "stdout", "ab"),
                                     stderr=subprocess.STDOUT, cwd=self.root,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log_tail()
            try:
                if self.query("SELECT 1").strip() == "1":
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        raise AssertionError("clickhouse-server did not answer:\n" + self.log_tail())

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log_tail(self):
        out = []
        for f in ("stdout", "err.log"):
            p = self.root / "log" / f
            if p.exists():
                out.append(p.read_text(errors="replace")[-3000:])
        return "\n".join(out)

    def query(self, sql, user=None, password=None, timeout=60):
        req = urllib.request.Request(self.url, data=sql.encode())
        if user:
            import base64
            tok = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            req.add_header("Authorization", "Basic " + tok)
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read().decode()

    def scalar(self, sql):
        return int(self.query(sql).strip() or 0)

    def rows(self, sql):
        """TabSeparated rows as lists of strings."""
        text = self.query(sql + " FORMAT TabSeparated")
        return [line.split("\t") for line in text.splitlines() if line]

    def reset(self):
        self.query("DROP DATABASE IF EXISTS stepscope")
