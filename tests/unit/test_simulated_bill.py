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
