"""Wake-up by LISTEN/NOTIFY: a hint that work may be waiting, never the only way to find it.

A trigger (migrations/0001_core.sql) notifies the channel ``tether:<schema>`` whenever a job
becomes queued; NOTIFY is delivered at commit, so a rolled-back enqueue wakes nobody.

One background thread per store owns a dedicated autocommit connection that LISTENs. When the
connection drops (server restart, terminated backend, network) the thread reconnects with
backoff and LISTENs again; since notifications sent meanwhile are lost, every (re)connect
counts as one wake-up, so waiting workers poll at once. An idle connection is probed now and
then, and TCP keepalives / ``tcp_user_timeout`` (store.py) bound a half-open one. Workers
still poll on their interval whatever happens here: the listener only shortens the wait.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable

import psycopg
from psycopg import sql

from ...wakeup import Wakeup
from ..tx import present

log = logging.getLogger("tether.store.postgres.notify")

SCHEMA = """
SELECT coalesce(
    (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = to_regclass('jobs')), current_schema()) AS schema
"""
"""The schema whose channels a store's listeners use: where its ``jobs`` table is."""

_CHANNEL = "SELECT left(%s || coalesce(%s::text, (" + SCHEMA + ")), 63)"


FINISHED = "tether.done:"
"""Channel prefix of migration 0007: a job reached a terminal state (payload: its id). Since
migration 0015 a finish notifies only while a listener's row in ``finish_listeners`` is live."""

REGISTRATION_S = 60.0
"""How long a listener's row lives unless renewed; renewed every third of it while connected,
so a listener that died stops costing finishes their NOTIFY within this time."""

_REGISTER = sql.SQL(
    "INSERT INTO {} (id, until) VALUES (%s, now() + make_interval(secs => %s)) "
    "ON CONFLICT (id) DO UPDATE SET until = EXCLUDED.until")
_FORGET = sql.SQL("DELETE FROM {} WHERE id = %s OR until < now() - interval '1 hour'")
_SNAPSHOT = "SELECT pg_current_snapshot()::text AS snap"
_RUNNING = ("SELECT count(*) AS n FROM pg_snapshot_xip(%s::pg_snapshot) AS x "
            "WHERE pg_xact_status(x) = 'in progress'")


class Listener:
    """LISTENs on ``<prefix><schema>``; ``on_notify`` (if given) gets each payload, in the
    listening thread, before waiters are woken. ``schema`` names the schema when the
    listening connection's own search_path may not find it (a direct URL beside a pooled
    one); by default it is where that connection finds ``jobs``."""

    def __init__(self, conninfo: str, *, probe_interval: float = 15.0,
                 max_backoff: float = 5.0, prefix: str = "tether:",
                 on_notify: Callable[[str], None] | None = None,
                 schema: str | None = None, settle_timeout: float = 5.0) -> None:
        self.conninfo = conninfo
        self.prefix = prefix
        self.registers = prefix == FINISHED
        self.settle_timeout = settle_timeout
        self._id = uuid.uuid4().hex
        self._renew_at = 0.0
        self.schema = schema
        self.on_notify = on_notify
        self.probe_interval = probe_interval
        self.max_backoff = max_backoff
        self.channel: str | None = None
        self.backend_pid: int | None = None
        self.connections = 0  # how many times LISTEN was (re-)established
        self.listening = threading.Event()
        self._pending = threading.Event()
        self._waiters: set[threading.Event | Wakeup] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the waiting side -------------------------------------------------------------------------

    def wait(self, timeout: float, wake: threading.Event | Wakeup | None = None) -> bool:
        """Return True as soon as a notification arrived since the last wait (or arrives
        now); False when ``wake`` was set or ``timeout`` passed without one."""
        self._start()
        event = wake if wake is not None else threading.Event()
        with self._lock:
            self._waiters.add(event)
        try:
            if not self._pending.is_set():
                event.wait(timeout)
        finally:
            with self._lock:
                self._waiters.discard(event)
        if self._pending.is_set():
            self._pending.clear()
            return True
        return False

    def _signal(self) -> None:
        with self._lock:
            self._pending.set()
            for event in self._waiters:
                event.set()

    # --- the listening thread ---------------------------------------------------------------------

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="tether-listen",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as conn:
                    self._listen(conn)
                    backoff = 0.1
                    self._serve(conn)
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any failure
                if not self._stop.is_set():
                    log.warning("LISTEN connection lost (%s); reconnecting in %.1fs",
                                str(exc).strip().splitlines()[0] if str(exc).strip() else exc,
                                backoff)
            finally:
                self.listening.clear()
                self.backend_pid = None
            self._stop.wait(backoff)
            backoff = min(backoff * 2, self.max_backoff)

    def _listen(self, conn: psycopg.Connection) -> None:
        self.channel = present(conn.execute(_CHANNEL, (self.prefix, self.schema)).fetchone())[0]
        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        if self.registers:
            self._register(conn)
            self._settle(conn)
        self.backend_pid = conn.info.backend_pid
        self.connections += 1
        self.listening.set()
        self._signal()  # whatever was notified while we were not listening is lost: poll now

    def _serve(self, conn: psycopg.Connection) -> None:
        quiet_since = time.monotonic()
        while not self._stop.is_set():
            heard = False
            for note in conn.notifies(timeout=1.0):  # returns each second to notice close()
                heard = True
                if self.on_notify is not None:
                    self.on_notify(note.payload)
                self._signal()
            if self.registers and time.monotonic() >= self._renew_at:
                self._register(conn)
                quiet_since = time.monotonic()
            if heard:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= self.probe_interval:
                conn.execute("SELECT 1")
                quiet_since = time.monotonic()
        if self.registers:
            conn.execute(_FORGET.format(self._table(conn)), (self._id,))

    # --- the registration (finish channel only) ---------------------------------------------------

    def _table(self, conn: psycopg.Connection) -> sql.Composable:
        schema = self.schema or present(conn.execute(SCHEMA).fetchone())[0]
        return sql.Identifier(schema, "finish_listeners")

    def _register(self, conn: psycopg.Connection) -> None:
        """Make finishes notify (again) for the next ``REGISTRATION_S`` seconds."""
        conn.execute(_REGISTER.format(self._table(conn)), (self._id, REGISTRATION_S))
        self._renew_at = time.monotonic() + REGISTRATION_S / 3

    def _settle(self, conn: psycopg.Connection) -> None:
        """Return once every transaction that was running when the row was registered has
        ended (or after ``settle_timeout``). One of them may have finished a job after looking
        at the table before the row was there, and so sends no NOTIFY; once it has ended, a
        re-read (which every (re)connect triggers) sees its finish. A transaction that had not
        yet written has no xid in the snapshot, and when it writes it will see the row."""
        snap = present(conn.execute(_SNAPSHOT).fetchone())[0]
        deadline = time.monotonic() + self.settle_timeout
        delay = 0.001
        while present(conn.execute(_RUNNING, (snap,)).fetchone())[0]:
            if time.monotonic() >= deadline or self._stop.is_set():
                log.warning("finish listener: transactions older than its registration still "
                            "run after %.0fs; listening without waiting for them",
                            self.settle_timeout)
                return
            self._stop.wait(delay)
            delay = min(delay * 2, 0.05)

    def close(self) -> None:
        self._stop.set()
        self._signal()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=3)


class FinishListener:
    """A ``FinishSignal`` over LISTEN on ``tether.done:<schema>``: the ids of jobs that reached a
    terminal state since the last wait, or ``None`` after a timeout or a (re)connect, when some
    notification may have been missed."""

    def __init__(self, conninfo: str, schema: str | None = None) -> None:
        self._heard: set[int] = set()
        self._lock = threading.Lock()
        self._connections = 0
        self._listener = Listener(conninfo, prefix=FINISHED, on_notify=self._note,
                                  schema=schema)
        self._listener.wait(0)  # starts listening: what finishes from here on is heard
        if self._listener.listening.wait(5.0):
            self._connections = self._listener.connections

    def _note(self, payload: str) -> None:
        try:
            job_id = int(payload)
        except ValueError:
            return
        with self._lock:
            self._heard.add(job_id)

    def wait(self, timeout: float) -> set[int] | None:
        heard = self._listener.wait(timeout)
        with self._lock:
            ids, self._heard = self._heard, set()
        if self._listener.connections != self._connections:
            self._connections = self._listener.connections
            return None
        return ids if heard else None

    def close(self) -> None:
        self._listener.close()


class ActivityListener:
    """Wakes a reader of events when a job was queued (``tether:<schema>``) or finished
    (``tether.done:<schema>``): the two notifications the schema already sends. ``wait``
    always returns ``None`` (re-read); events in between (claims, stages, a job's own events)
    carry no NOTIFY, so the reader also re-reads on its own interval."""

    def __init__(self, conninfo: str, schema: str | None = None) -> None:
        self._heard = threading.Event()
        self._listeners = [Listener(conninfo, on_notify=self._note, schema=schema),
                           Listener(conninfo, prefix=FINISHED, on_notify=self._note,
                                    schema=schema)]
        for listener in self._listeners:
            listener.wait(0)  # starts listening

    def _note(self, payload: str) -> None:
        self._heard.set()

    def wait(self, timeout: float) -> set[int] | None:
        self._heard.wait(timeout)
        self._heard.clear()
        return None

    def close(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._heard.set()


class PollingSignal:
    """A ``FinishSignal`` with no channel to hear (a pooled URL without a direct one for
    LISTEN): ``wait`` sleeps out its timeout, or until ``close``, and says re-read."""

    def __init__(self) -> None:
        self._closed = threading.Event()

    def wait(self, timeout: float) -> set[int] | None:
        self._closed.wait(timeout)
        return None

    def close(self) -> None:
        self._closed.set()
