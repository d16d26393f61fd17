"""Wakeup: the worker's wake-up flag, raised by other threads and by SIGTERM's handler."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tether import Tether
from tether.wakeup import Wakeup
from tether.worker import Worker

ROOT = Path(__file__).resolve().parents[2]

# The main thread waits and clears in a tight loop while another process floods it with signals
# whose handler sets the same flag. With threading.Event in place of Wakeup the handler soon
# lands while the main thread holds the event's lock (inside Condition.wait) and blocks on it.
# A lone SIGTERM there blocks for good; under the flood the next signals re-enter the blocked
# handler until RecursionError ends the process: 4 of 5 runs of 20,000 signals died so. A
# watchdog turns a plain hang into exit code 3.
FLOOD = """
import os, signal, subprocess, sys, threading, time
from tether.wakeup import Wakeup
wake, waits = Wakeup(), [0]
signal.signal(signal.SIGUSR1, lambda *_: wake.set())
def watchdog():
    last = -1
    while True:
        time.sleep(2)
        if waits[0] == last:
            os._exit(3)
        last = waits[0]
threading.Thread(target=watchdog, daemon=True).start()
sender = subprocess.Popen([sys.executable, "-c", "import os, signal, time\\n"
                           "for _ in range(%d): os.kill(%d, signal.SIGUSR1); time.sleep(5e-5)"
                           % (int(sys.argv[1]), os.getpid())])
while sender.poll() is None:
    wake.wait(0.0002)
    wake.clear()
    waits[0] += 1
sys.exit(sender.returncode)
"""


def test_set_wait_clear_behave_like_an_event():
    w = Wakeup()
    assert not w.is_set() and w.wait(0) is False
    w.set()
    w.set()
    assert w.is_set() and w.wait(0) is True and w.wait(0) is True  # stays set until cleared
    w.clear()
    assert not w.is_set() and w.wait(0.01) is False  # both tokens gone with the clear
    assert w.wait(-1) is False


def test_a_set_from_another_thread_ends_a_wait_early():
    w = Wakeup()
    timer = threading.Timer(0.05, w.set)
    timer.start()
    began = time.monotonic()
    assert w.wait(30) is True
    assert time.monotonic() - began < 10
    timer.join()


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signal handlers run in the main thread")
def test_a_signal_handler_in_the_waiting_thread_ends_its_wait():
    w = Wakeup()
    old = signal.signal(signal.SIGUSR1, lambda *_: w.set())
    sender = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        sender.start()
        assert w.wait(30) is True
    finally:
        sender.cancel()
        sender.join()
        signal.signal(signal.SIGUSR1, old)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signal handlers run in the main thread")
def test_sigterm_stops_a_worker_waiting_in_the_main_thread(tmp_path):
    """The worker's own SIGTERM handler, raised while the loop waits with a long poll interval:
    the drain starts at once, not one poll interval later."""
    app = Tether(f"sqlite:///{tmp_path / 't.db'}")
    worker = Worker(app, concurrency=1, poll_interval=60.0, rescue_interval=60.0)
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    killer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        killer.start()
        began = time.monotonic()
        worker.run()
        assert time.monotonic() - began < 30
        assert worker.stopping
    finally:
        killer.cancel()
        killer.join()
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])
        app.close()


def test_a_flood_of_signal_handlers_setting_it_never_deadlocks_the_waiting_thread():
    done = subprocess.run([sys.executable, "-c", FLOOD, "20000"], cwd=ROOT, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
                          capture_output=True, text=True)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
