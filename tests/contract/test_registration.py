"""Every documented way to register a job type runs a job to success (real in-process worker,
every backend)."""

import asyncio

import pytest

from tether import JobState, Tether, stage
from tether.errors import ConfigurationError


@pytest.fixture
def app(database_url):
    a = Tether(database_url)
    yield a
    a.close()


def succeeded(app, type_, payload):
    job = app.run(type_, payload, timeout=30)
    assert job.state == JobState.SUCCEEDED, (job.error_code, job.error_summary)
    return job


def stages_of(app, job):
    return [c.stage for c in app.checkpoints(job.id)]


def words(ctx, value):
    return value["text"].split()


def count(ctx, items):
    return len(items)


def test_bare_decorator_registers_under_the_function_name(app):
    @app.job
    def shout(ctx, payload):
        return payload["text"].upper()
    assert shout(None, {"text": "x"}) == "X"
    assert succeeded(app, "shout", {"text": "hi"}).result == "HI"


def test_decorator_with_empty_parentheses(app):
    @app.job()
    def echo(ctx, payload):
        return payload
    assert succeeded(app, "echo", {"a": 1}).result == {"a": 1}


def test_decorator_with_name_and_options(app):
    @app.job("summarize", safe_to_retry=False, max_attempts=5, queue="docs", priority=2)
    def summarize(ctx, payload):
        return {"n": len(payload["text"])}
    job = succeeded(app, "summarize", {"text": "abc"})
    assert job.result == {"n": 3}
    assert (job.queue, job.max_attempts, job.priority) == ("docs", 5, 2)
    assert app.registry.get("summarize").safe_to_retry is False


def test_decorator_on_an_async_function(app):
    @app.job("later")
    async def later(ctx, payload):
        await asyncio.sleep(0)
        return payload["x"] * 2
    assert succeeded(app, "later", {"x": 21}).result == 42


def test_stages_as_decorator_argument_make_the_function_the_last_stage(app):
    @app.job("p", stages=[words, count])
    def report(ctx, n):
        return {"words": n}
    job = succeeded(app, "p", {"text": "a b c"})
    assert job.result == {"words": 3}
    assert stages_of(app, job) == ["words", "count", "report"]


def test_stages_as_decorator_argument_with_an_async_last_stage(app):
    @app.job(stages=[words])
    async def tally(ctx, items):
        await asyncio.sleep(0)
        return len(items)
    job = succeeded(app, "tally", {"text": "a b"})
    assert job.result == 2 and stages_of(app, job) == ["words", "tally"]


def test_pipeline_with_named_stages(app):
    @stage("split")
    def split(ctx, value):
        return value["text"].split()
    app.pipeline("p2", [split, count], max_attempts=2)
    job = succeeded(app, "p2", {"text": "x y z w"})
    assert job.result == 4 and stages_of(app, job) == ["split", "count"]


def test_register_a_function_and_a_stage_list(app):
    app.register("fn", lambda ctx, payload: payload["v"] + 1)
    app.register("listed", None, stages=[words, count])
    assert succeeded(app, "fn", {"v": 1}).result == 2
    assert succeeded(app, "listed", {"text": "q r"}).result == 2


def test_registering_the_same_function_again_is_harmless_but_another_is_refused(app):
    def one(ctx, payload):
        return 1
    app.job("same")(one)
    app.job("same")(one)
    with pytest.raises(ConfigurationError, match="registered twice"):
        app.job("same")(lambda ctx, payload: 2)
    with pytest.raises(ConfigurationError, match="stage names must be unique"):
        app.job("dup", stages=[words])(words)
    assert succeeded(app, "same", {}).result == 1


@pytest.mark.parametrize("options", [{"max_attempts": 0}, {"max_attempts": 2**31},
                                     {"priority": 2**31}, {"priority": -2**31}])
def test_a_job_type_whose_defaults_no_store_can_hold_is_refused_at_registration(app, options):
    with pytest.raises(ConfigurationError, match=next(iter(options))):
        app.job("wide", **options)(lambda ctx, payload: None)
    assert "wide" not in app.registry
