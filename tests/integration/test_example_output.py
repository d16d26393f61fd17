"""The example pipeline writes only under its output directory (a real worker process).

A payload's ``output`` is a path relative to ``TETHER_EXAMPLE_OUTPUT_DIR``; one that resolves
outside it (absolute, ``..``, a symlink) fails the job as ``policy_block`` before any stage or
provider call, without retry, and a submitter that knows the job type refuses it up front.
"""

import pytest

from examples.pipeline import app as pipeline_app
from tether import JobState, Tether
from tether.errors import InvalidPayload
from tether.providers.simulated import read_bill
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow

TEXT = "Tether keeps long pipelines durable across crashes and budget limits. " * 8


def test_outputs_stay_under_the_output_directory(tmp_path):
    out_dir, outside = tmp_path / "out", tmp_path / "outside"
    out_dir.mkdir()
    outside.mkdir()
    (out_dir / "link").symlink_to(outside, target_is_directory=True)
    url = f"sqlite:///{tmp_path}/t.db"
    client = Tether(url)  # no job types: like `tether submit` without --app, it accepts any
    payload = {"text": TEXT, "questions_per_chunk": 1}
    good = client.submit("qa_pipeline", dict(payload, output="runs/qa.jsonl"))
    bad = {name: client.submit("qa_pipeline", dict(payload, output=path)).id for name, path in {
        "dotdot": "../outside/dotdot.jsonl", "absolute": str(outside / "absolute.jsonl"),
        "symlink": "link/symlink.jsonl", "the directory itself": "."}.items()}
    bill = tmp_path / "bill.jsonl"
    w = start_worker(url, app="examples.pipeline:app", concurrency=2, log=tmp_path / "w.log",
                     env={"TETHER_EXAMPLE_OUTPUT_DIR": str(out_dir), "TETHER_SIM_BILL": str(bill),
                          "TETHER_SIM_LATENCY": "0"})
    try:
        wait_until(lambda: all(client.get(i).terminal for i in [good.id, *bad.values()]),
                   timeout=60, what="every job to finish")
    finally:
        stop(w)

    done = client.get(good.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    written = (out_dir / "runs" / "qa.jsonl").read_text().splitlines()
    assert len(written) == done.result["questions"] > 0
    for name, job_id in bad.items():
        job = client.get(job_id)
        assert (job.state, job.error_code, job.attempt_count) == (
            JobState.FAILED, "policy_block", 1), name
        assert str(out_dir) in job.error_summary, (name, job.error_summary)
        assert client.checkpoints(job_id) == [] and client.ledger(job_id) == [], name
        assert not [e for e in read_bill(bill) if e.job_id == job_id], name
    assert list(outside.iterdir()) == []
    client.close()


def test_a_submitter_that_knows_the_type_refuses_an_escaping_output(tmp_path, monkeypatch):
    monkeypatch.setenv("TETHER_EXAMPLE_OUTPUT_DIR", str(tmp_path / "out"))
    app = Tether(f"sqlite:///{tmp_path}/t.db")
    app.registry = pipeline_app.registry
    for path in ("../x.jsonl", "/etc/x.jsonl", "", None, 7):
        with pytest.raises(InvalidPayload, match="output"):
            app.submit("qa_pipeline", {"text": TEXT, "output": path})
    assert app.list() == []
    assert app.submit("qa_pipeline", {"text": TEXT, "output": "a/b.jsonl"}).id
    app.close()
