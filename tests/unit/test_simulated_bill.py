"""The simulated provider's bill: one O_APPEND write per billed call; fsync only when asked."""

import os

from tether.providers.simulated import SimulatedProvider, bill_total, read_bill


def _count_fsyncs(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    return calls


def test_each_call_is_billed_once_without_a_flush_by_default(tmp_path, monkeypatch):
    fsyncs = _count_fsyncs(monkeypatch)
    sim = SimulatedProvider(tmp_path / "bill.jsonl")
    for i in range(3):
        sim.complete(f"prompt {i}", key=f"k{i}", max_tokens=16, job_id=7)
    bill = read_bill(tmp_path / "bill.jsonl")
    assert [e.key for e in bill] == ["k0", "k1", "k2"] and {e.job_id for e in bill} == {7}
    assert bill_total(tmp_path / "bill.jsonl") > 0
    assert fsyncs == []


def test_fsync_true_flushes_every_line(tmp_path, monkeypatch):
    fsyncs = _count_fsyncs(monkeypatch)
    sim = SimulatedProvider(tmp_path / "bill.jsonl", fsync=True)
    sim.complete("a", key="k1", max_tokens=8)
    sim.complete("b", key="k2", max_tokens=8)
    assert len(fsyncs) == 2 and len(read_bill(tmp_path / "bill.jsonl")) == 2


def test_a_bill_line_is_one_json_object_whatever_the_key(tmp_path):
    import json
    sim = SimulatedProvider(tmp_path / "bill.jsonl")
    sim.complete("p", key='k "quoted" \\ ünïcode\n', max_tokens=8)
    sim.complete("q", key="plain", max_tokens=8, job_id=42)
    lines = (tmp_path / "bill.jsonl").read_text().splitlines()
    first, second = (json.loads(line) for line in lines)
    assert first["key"] == 'k "quoted" \\ ünïcode\n' and first["job_id"] is None
    assert second["job_id"] == 42 and second["pid"] == os.getpid()
    assert set(first) == {"ts", "key", "job_id", "model", "input_tokens", "output_tokens",
                          "cost_usd", "status", "pid"}
    assert [e.key for e in read_bill(tmp_path / "bill.jsonl")] == [first["key"], "plain"]


def test_answers_depend_only_on_seed_model_and_prompt(tmp_path):
    a = SimulatedProvider(tmp_path / "a.jsonl", seed=3)
    b = SimulatedProvider(tmp_path / "b.jsonl", seed=3)
    assert a.answer("hello", 64, "sim-small") == b.answer("hello", 64, "sim-small")
    assert a.answer("hello", 64, "sim-small") != a.answer("hello!", 64, "sim-small")
    text, n = a.answer("hello", 3, "sim-small")
    assert n == 3 and len(text.split()) == 3, "never more words than max_tokens"
