"""The migrations produce the expected schema, the same tables and columns on every backend."""

import json
from datetime import datetime, timezone
from decimal import Decimal

EXPECTED = {
    "schema_migrations": {"version", "name", "applied_at"},
    "queues": {"name", "paused", "updated_at"},
    "job_types": {"name", "paused", "updated_at"},
    "flow_limits": {"scope", "name", "key_field", "per_key", "total", "updated_at"},
    "jobs": {"id", "type", "project", "queue", "state", "stage", "priority", "run_after",
             "attempt_count", "max_attempts", "safe_to_retry", "idempotency_key",
             "input_config_hash", "payload", "result", "error_code", "error_summary", "budget",
             "price_profile", "estimated_cost_usd", "parent_id", "lease_owner",
             "lease_expires_at", "lease_attempt", "event_seq", "created_at", "updated_at",
             "finished_at", "detached", "trace_context", "version", "flow_mode", "flow_key"},
    "job_waits": {"job_id", "key", "kind", "status", "wake_at", "children", "fail_mode",
                  "signal", "prompt", "schema", "outcome", "value", "attempt", "created_at",
                  "done_at", "child_count", "pending", "failed"},
    "wait_children": {"job_id", "key", "pos", "child_id"},
    "job_signals": {"id", "job_id", "name", "value", "sent_at", "consumed_at", "consumed_by"},
    "job_events": {"job_id", "seq", "at", "kind", "from_state", "to_state", "attempt", "data"},
    "job_attempts": {"job_id", "attempt", "worker_id", "claimed_at", "started_at",
                     "finished_at", "outcome", "error_code", "error_summary"},
    "workers": {"id", "hostname", "pid", "queues", "concurrency", "started_at",
                "last_heartbeat_at", "stopped_at", "types", "lease_ttl", "versions"},
    "budgets": {"scope", "key", "limits", "spent_usd", "reserved_usd", "calls",
                "reserved_calls", "input_tokens", "output_tokens", "reserved_input_tokens",
                "reserved_output_tokens", "examples", "updated_at"},
    "call_journal": {"job_id", "key", "stage", "status", "attempt", "provider", "model",
                     "request_hash", "reserved_usd", "reserved_input_tokens",
                     "reserved_output_tokens", "result", "usage", "cost_usd", "error_code",
                     "error_summary", "created_at", "updated_at", "reused_from", "fingerprint"},
    "cost_ledger": {"id", "job_id", "project", "stage", "key", "attempt", "provider", "model",
                    "input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens",
                    "input_per_mtok", "output_per_mtok", "cached_input_per_mtok",
                    "cache_write_tokens", "cache_write_1h_tokens", "cache_write_per_mtok",
                    "cache_write_1h_per_mtok", "price_profile", "cost_usd", "reserved_usd", "confirmed", "overrun",
                    "created_at", "reused_from", "reused_cost_usd"},
    "checkpoints": {"job_id", "stage", "position", "blob", "size", "attempt", "created_at",
                    "reused_from", "version"},
    "blobs": {"sha256", "data", "size", "created_at"},
    "price_profiles": {"id", "name", "effective_date", "body", "created_at"},
    "api_tokens": {"id", "name", "token_hash", "projects", "admin", "created_at",
                   "last_used_at", "revoked_at"},
    "rate_limit_events": {"id", "scope", "at", "tokens", "job_id", "key", "settled"},
    "provider_limits": {"scope", "observed_at", "requests_limit", "requests_remaining",
                        "requests_reset_at", "tokens_limit", "tokens_remaining",
                        "tokens_reset_at", "retry_at", "requests_in_flight",
                        "tokens_in_flight", "updated_at"},
    "schedules": {"name", "cron", "timezone", "catch_up", "type", "project", "queue",
                  "priority", "max_attempts", "safe_to_retry", "payload", "budget",
                  "input_config_hash", "price_profile", "estimated_cost_usd", "paused",
                  "next_run_at", "last_run_at", "last_job_id", "created_at", "updated_at"},
    "spend_totals": {"project", "provider", "model", "calls", "input_tokens", "output_tokens",
                     "cost_usd", "unconfirmed_calls"},
    "engine_counters": {"name", "owner", "n"},
    "provider_batches": {"job_id", "key", "stage", "attempt", "provider", "model", "tether_key",
                         "status", "remote_id", "remote_status", "items", "price",
                         "standard_price", "price_profile", "reserved_usd",
                         "reserved_input_tokens", "reserved_output_tokens", "settled_usd",
                         "standard_usd", "items_total", "items_done", "items_failed",
                         "polls", "next_poll_at", "error", "created_at", "updated_at",
                         "settled_at"},
    "wait_callbacks": {"id", "job_id", "wait_key", "signal", "token_hash", "issued_by",
                       "created_at", "expires_at", "handed_at", "used_at"},
    "budget_crossings": {"scope", "key", "limit_name", "threshold", "limit_value", "period",
                         "project", "metric", "used", "period_start", "job_id", "crossed_at"},
    "provider_batch_answers": {"job_id", "key", "pos", "item", "ok", "value", "error_code",
                               "error_summary", "retryable"},
    "webhook_subscriptions": {"id", "project", "url", "kinds", "secret", "description",
                              "created_at"},
    "webhook_deliveries": {"id", "subscription_id", "project", "owner", "kind", "url",
                           "job_id", "sends", "body", "created_at"},
    "webhook_attempts": {"delivery_id", "n", "job_id", "at", "status", "error", "duration_ms"},
    "webhook_cursor": {"name", "position"},
    "schedule_misses": {"id", "schedule", "project", "first_tick", "last_tick", "missed", "at",
                        "dispatched_at"},
}

# The partial index that claims use, and the ones that keep finished rows out of hot paths.
EXPECTED_INDEXES = {"jobs_idempotency", "jobs_claimable", "jobs_retry_due", "jobs_leases",
                    "jobs_lease_owner", "call_journal_open", "call_journal_cache",
                    "rate_limit_events_scope", "jobs_waiting_due", "jobs_parent",
                    "job_signals_mailbox", "schedules_due", "job_events_feed",
                    "job_signals_job", "jobs_idempotency_key",
                    "wait_children_child", "provider_batches_due",
                    "cost_ledger_created", "provider_batches_unsent",
                    "webhook_deliveries_subscription", "schedule_misses_pending",
                    "jobs_queue_finished"}


def _schema(store, backend):
    if backend == "sqlite":
        conn = store._conn()
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%'")]
        cols = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in tables}
        indexes = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
        return cols, indexes
    with store._read() as tx:
        rows = tx.conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema()").fetchall()
        idx = tx.conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()").fetchall()
    cols: dict[str, set[str]] = {}
    for r in rows:
        cols.setdefault(r["table_name"], set()).add(r["column_name"])
    return cols, {r["indexname"] for r in idx}


# PostgreSQL only: who listens for finishes, so a finish notifies only then (0015).
EXPECTED_POSTGRES = {"finish_listeners": {"id", "until"}}


def test_migrations_produce_the_expected_schema(store, backend):
    cols, indexes = _schema(store, backend)
    assert cols == (EXPECTED if backend == "sqlite" else EXPECTED | EXPECTED_POSTGRES)
    assert EXPECTED_INDEXES <= indexes
    assert store.schema_version() == 35


def test_the_call_cache_index_holds_only_rows_it_can_find_and_the_lookup_uses_it(store,
                                                                               backend):
    """Done calls without a request hash (every call not made with cache=True) stay out of
    the cache index: each would cost a page write per settled batch and never be found."""
    if backend == "sqlite":
        conn = store._conn()
        (definition,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = "
                                     "'call_journal_cache'").fetchone()
        from tether.store.sqlite.tx import BOUND
        sql, bind = BOUND["journal_cached"]
        plan = " ".join(str(r[-1]) for r in conn.execute(
            "EXPLAIN QUERY PLAN " + sql, bind({"project": "p", "request_hash": "h"})))
    else:
        from tether.store.postgres.store import QUERIES
        with store._read() as tx:
            definition = tx.conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = "
                                         "'call_journal_cache' AND schemaname = "
                                         "current_schema()").fetchone()["indexdef"]
            tx.conn.execute("SET LOCAL enable_seqscan = off")
            plan = " ".join(r["QUERY PLAN"] for r in tx.conn.execute(
                "EXPLAIN " + QUERIES["journal_cached"], {"project": "p", "request_hash": "h"}))
    assert "request_hash IS NOT NULL" in definition
    assert "call_journal_cache" in plan, plan


def test_migrating_again_changes_nothing(store, backend):
    before = _schema(store, backend)
    assert store.migrate() == []
    assert _schema(store, backend) == before


def test_upgrading_keeps_the_rows_written_before(database_url, backend, monkeypatch):
    """A database written by the previous release (schema 4) migrates to the current one and
    its ledger rows read back whole: the new cache-write columns take their defaults, the
    running totals (0018) count what was there, and budget rows of jobs pruned before 0019
    are removed."""
    import tether.store.postgres.store as pg_store
    import tether.store.sqlite.schema as sqlite_store
    from tether import Tether
    from tether.store.migrate import discover

    module = sqlite_store if backend == "sqlite" else pg_store
    monkeypatch.setattr(module, "discover", lambda folder: discover(folder)[:4])
    old = Tether(database_url)
    assert old.store.schema_version() == 4
    mark = "?" if backend == "sqlite" else "%s"
    at = 1.7e9 if backend == "sqlite" else datetime.fromtimestamp(1.7e9, timezone.utc)
    with old.store._write() as tx:  # the job as that release wrote it
        job_id = tx.conn.execute(
            "INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts, "
            "safe_to_retry, input_config_hash, payload, created_at, updated_at) VALUES "
            f"({', '.join([mark] * 12)}) RETURNING id",
            ("anything", "default", "default", "queued", 0, at, 3, True, "h", "{}", at,
             at)).fetchone()["id"]
    job = old.get(job_id)
    with old.store._write() as tx:
        tx.conn.execute(
            "INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model, "
            "input_tokens, output_tokens, cached_input_tokens, reasoning_tokens, input_per_mtok, "
            "output_per_mtok, cached_input_per_mtok, price_profile, cost_usd, reserved_usd, "
            f"confirmed, overrun, created_at) VALUES ({', '.join([mark] * 20)})",
            (job.id, "default", None, "k", 1, "anthropic", "claude-haiku-4-5", 100, 10, 20, 0,
             "1.00", "5.00", "0.10", "old@1", "0.000132", "0.0006", True, False,
             1.7e9 if backend == "sqlite" else datetime.fromtimestamp(1.7e9, timezone.utc)))
        tx.conn.execute(
            "INSERT INTO job_attempts (job_id, attempt, worker_id, claimed_at, finished_at, "
            f"outcome) VALUES ({', '.join([mark] * 6)})",
            (job.id, 1, "w-old", at, at, "lease_expired"))
        for scope, key in (("job", str(job.id)), ("job", str(job.id + 1000)),
                           ("project", "default")):
            tx.conn.execute(f"INSERT INTO budgets (scope, key, updated_at) VALUES "
                            f"({mark}, {mark}, {mark})", (scope, key, at))
    old.close()
    monkeypatch.undo()
    new = Tether(database_url)
    try:
        assert new.store.schema_version() == 35
        assert new.get(job.id).state == "queued"
        assert new.get(job.id).trace_context is None  # 0013: a job from before has none
        assert new.get(job.id).version == ""  # 0024: a job from before is unversioned
        with new.store._write() as tx:  # 0009 widened the state check of existing tables
            tx.conn.execute(f"UPDATE jobs SET state = 'waiting' WHERE id = {mark}", (job.id,))
        assert new.get(job.id).state == "waiting"
        (row,) = new.ledger(job.id)
        assert (row.input_tokens, row.cached_input_tokens, row.cost_usd) == (100, 20,
                                                                             Decimal("0.000132"))
        assert (row.cache_write_tokens, row.cache_write_1h_tokens) == (0, 0)
        assert row.cache_write_per_mtok is None and row.cache_write_1h_per_mtok is None
        # 0018: the running totals start from the history the upgrade found
        (total,) = new.spend_totals()
        assert (total["provider"], total["calls"], total["input_tokens"],
                total["cost_usd"]) == ("anthropic", 1, 100, Decimal("0.000132"))
        stats = new.engine_stats()
        assert (stats["claims_total"], stats["lease_expiries_total"]) == (1, 1)
        # 0019: the budget row of a job an earlier prune deleted is gone, the rest kept
        with new.store._read() as tx:
            budgets = tx.conn.execute("SELECT scope, key FROM budgets").fetchall()
        assert {(r["scope"], r["key"]) for r in budgets} == {("job", str(job.id)),
                                                             ("project", "default")}
    finally:
        new.close()


def test_upgrading_moves_batch_answers_to_rows_and_marks_unsent_batches(database_url, backend,
                                                                        monkeypatch):
    """Batches written before 0030/0031: a settled batch's answers (one JSON value in its row)
    come back from their own rows in the batch's order, values and failures whole; a batch
    reserved and not yet known to be at the provider is marked as possibly sent."""
    import tether.store.postgres.store as pg_store
    import tether.store.sqlite.schema as sqlite_store
    from tether import Tether
    from tether.store.migrate import discover

    module = sqlite_store if backend == "sqlite" else pg_store
    monkeypatch.setattr(module, "discover", lambda folder: discover(folder)[:25])
    old = Tether(database_url)
    assert old.store.schema_version() == 25
    mark = "?" if backend == "sqlite" else "%s"
    at = 1.7e9 if backend == "sqlite" else datetime.fromtimestamp(1.7e9, timezone.utc)
    items = json.dumps([{"key": k, "hash": "h", "reserved_usd": "0.01", "input_tokens": 1,
                         "output_tokens": 1} for k in ("z", "a b", "m")])
    results = json.dumps({"a b": {"ok": True, "value": {"text": "hi", "n": [1, 2]}},
                          "z": {"ok": True, "value": "plain"},
                          "m": {"ok": False, "value": None, "error_code": "transient",
                                "error_summary": "429", "retryable": True}})
    with old.store._write() as tx:
        job_id = tx.conn.execute(
            "INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts, "
            "safe_to_retry, input_config_hash, payload, created_at, updated_at) VALUES "
            f"({', '.join([mark] * 12)}) RETURNING id",
            ("anything", "default", "default", "queued", 0, at, 3, True, "h", "{}", at,
             at)).fetchone()["id"]
        for key, status, res in (("batch:done", "settled", results),
                                 ("batch:open", "submitting", None)):
            tx.conn.execute(
                "INSERT INTO provider_batches (job_id, key, attempt, provider, model, "
                "tether_key, status, items, price, standard_price, price_profile, reserved_usd, "
                "reserved_input_tokens, reserved_output_tokens, items_total, results, "
                f"created_at, updated_at) VALUES ({', '.join([mark] * 18)})",
                (job_id, key, 1, "simulated", "sim-small", "t", status, items, "{}", "{}", "p",
                 "0.03", 3, 3, 3, res, at, at))
    old.close()
    monkeypatch.undo()
    new = Tether(database_url)
    try:
        assert new.store.schema_version() == 35
        answers = new.store.batch_answers(job_id, "batch:done")
        assert list(answers) == ["z", "a b", "m"]
        assert answers["a b"] == {"ok": True, "value": {"text": "hi", "n": [1, 2]},
                                  "error_code": None, "error_summary": None, "retryable": False}
        assert answers["z"]["value"] == "plain"
        assert answers["m"] == {"ok": False, "value": None, "error_code": "transient",
                                "error_summary": "429", "retryable": True}
        assert new.store.get_batch(job_id, "batch:open").remote_status == "uploading"
        assert new.store.batch_answers(job_id, "batch:open") == {}
    finally:
        new.close()
