"""``ctx.patched``: True for a job whose history code with the patch began, False for one whose
earlier attempts recorded progress without an answer, and the recorded answer on every replay.
Both backends, in-process workers, no sleeps."""

from tether import JobState

S = JobState


def run(app):
    app.worker(concurrency=1, schedule_interval=None,
               group_commit=False).run(install_signals=False, stop_when_idle=True)


def patched_type(app, code):
    """Type ``t``: stage ``a``, then (with the patch, ``code["patch"]``) asks ``patched("p")``,
    waits for ``go``, asks again, and returns what each ask said."""
    @app.job("t")
    def t(ctx, payload):
        ctx.stage("a", lambda: "a")
        first = ctx.patched("p") if code["patch"] else None
        ctx.wait_for_signal("go")
        return [first, ctx.patched("p") if code["patch"] else None]


def markers(app, job_id):
    return [e.data for e in app.events(job_id) if e.kind == "patched"]


def test_a_job_begun_by_code_with_the_patch_is_patched_on_every_replay(app):
    patched_type(app, {"patch": True})
    job = app.submit("t", {})
    run(app)
    assert app.get(job.id).state == S.WAITING
    assert markers(app, job.id) == [{"name": "p", "patched": True}]
    app.signal(job.id, "go")
    run(app)
    assert app.get(job.id).result == [True, True] and app.get(job.id).attempt_count == 2
    assert markers(app, job.id) == [{"name": "p", "patched": True}]  # recorded once


def test_a_job_whose_earlier_attempt_made_progress_without_the_patch_is_not(app):
    code = {"patch": False}
    patched_type(app, code)
    old = app.submit("t", {})
    run(app)  # the old code: stage a checkpointed, waiting for go
    assert app.get(old.id).state == S.WAITING
    code["patch"] = True  # a deploy
    new = app.submit("t", {})
    app.signal(old.id, "go")
    run(app)
    assert app.get(old.id).result == [False, False]
    assert markers(app, old.id) == [{"name": "p", "patched": False}]
    assert app.get(new.id).state == S.WAITING
    app.signal(new.id, "go")
    run(app)
    assert app.get(new.id).result == [True, True]


def test_a_job_queued_before_the_deploy_but_never_run_is_patched(app):
    code = {"patch": False}
    patched_type(app, code)
    job = app.submit("t", {})
    code["patch"] = True
    run(app)
    app.signal(job.id, "go")
    run(app)
    assert app.get(job.id).result == [True, True]


def test_an_answer_recorded_before_a_failed_attempt_is_the_answer_after_it(app, clock):
    calls = []

    @app.job("c", retry_on=(RuntimeError,))
    def c(ctx, payload):
        calls.append(ctx.patched("p"))
        if len(calls) == 1:
            ctx.stage("a", lambda: "a")
            raise RuntimeError("boom")  # an attempt that made progress, then failed
        return calls[-1]

    job = app.submit("c", {})
    app.worker(concurrency=1, schedule_interval=None,
               group_commit=False).run(install_signals=False, max_jobs=1)
    assert app.get(job.id).state == S.RETRY_WAIT
    clock.advance(3600)  # past the retry's backoff
    run(app)
    assert app.get(job.id).state == S.SUCCEEDED and calls == [True, True]
