"""``lock_calls_many`` and ``journal_keys_many`` (the reads of a group of many jobs' calls)
return, for each job, what the one-job statements return for it, on both backends; SQLite
keeps them for parity (its group commit goes through the one-job statements)."""

from __future__ import annotations

from tests.money import reserve, running_job


def _without(row: dict, *names: str) -> dict:
    return {k: v for k, v in dict(row).items() if k not in names}


def test_the_many_job_reads_match_the_one_job_reads(app, store):
    jobs = [running_job(app, project=p) for p in ("p1", "p2", "p1")]
    for n, (job, attempt) in enumerate(jobs):
        reserve(app, job, attempt, f"k{n}")
    ids = [job.id for job, _ in jobs]
    with store._write() as tx:
        many = tx.all("lock_calls_many", job_ids=store._array_param(ids),
                      job_keys=store._list_param(str(i) for i in ids))
        one = {i: tx.all("lock_calls", job_id=i, job_key=str(i)) for i in ids}
        got = tx.all("journal_keys_many", job_ids=store._array_param(ids + [ids[0]]),
                     keys=store._list_param(["k0", "k1", "k2", "nothing"]))
        alone = {i: tx.all("journal_keys", job_id=i, keys=store._list_param([f"k{n}"]))
                 for n, i in enumerate(ids)}
    for i in ids:
        mine = sorted((_without(r, "job_id") for r in many if r["job_id"] == i),
                      key=lambda r: r["scope"])
        assert mine == sorted((dict(r) for r in one[i]), key=lambda r: r["scope"])
        assert len(mine) == 2  # the job's accumulator and its project's
    assert sorted((r["job_id"], r["key"]) for r in got) == sorted(zip(ids, ["k0", "k1", "k2"]))
    for r in got:
        assert _without(r, "job_id") == dict(alone[r["job_id"]][0])
