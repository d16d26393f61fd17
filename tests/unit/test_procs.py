"""How tests wait for a process they started (``tests/procs.py``): a server slow to answer is
waited for, since a loaded machine is slow and not broken; a process that exits ends the wait at
once, with its output, instead of after the whole deadline."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.procs import free_port, stop, wait_http

SLOW_SERVER = """\
import http.server, sys, time
class Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(float(sys.argv[2]))
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
"""


def test_a_server_slow_to_answer_is_waited_for(tmp_path):
    port = free_port()
    log = tmp_path / "slow.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", SLOW_SERVER, str(port), "2"],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc, log=log)
    finally:
        stop(proc)


def test_a_process_that_exits_ends_the_wait_with_its_output(tmp_path):
    log = tmp_path / "crash.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", "print('no such app'); raise SystemExit(3)"],
                                stdout=out, stderr=subprocess.STDOUT)
    started = time.monotonic()
    with pytest.raises(AssertionError) as failed:
        wait_http(f"http://127.0.0.1:{free_port()}/healthz", proc, log=log, timeout=600)
    assert time.monotonic() - started < 60
    assert f"pid {proc.pid} with 3" in str(failed.value)
    assert "no such app" in str(failed.value)
