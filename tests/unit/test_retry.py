from tether.core.retry import RetryPolicy, classify
from tether.errors import PolicyBlock, ProviderAuthError, ProviderError, TransientError


def test_backoff_is_full_jitter_capped():
    p = RetryPolicy()
    assert p.backoff(1, rand=lambda: 1.0) == 1.0
    assert p.backoff(2, rand=lambda: 1.0) == 2.0
    assert p.backoff(4, rand=lambda: 0.5) == 4.0
    assert p.backoff(30, rand=lambda: 1.0) == 60.0
    assert p.backoff(30, rand=lambda: 0.0) == 0.0


def test_retry_after_is_a_floor():
    p = RetryPolicy()
    assert p.backoff(1, retry_after=7.5, rand=lambda: 0.1) == 7.5
    assert p.backoff(10, retry_after=1, rand=lambda: 1.0) == 60.0


def test_classification():
    d = classify(TransientError("x", retry_after=3), attempt=1, max_attempts=3,
                 rand=lambda: 0.0)
    assert (d.action, d.error_code, d.delay_s) == ("retry", "transient", 3)
    assert classify(TransientError("x"), attempt=3, max_attempts=3).action == "fail"
    assert classify(ProviderError("x", retryable=True), attempt=1, max_attempts=3).action == "retry"
    assert classify(ProviderError("x", retryable=False), attempt=1, max_attempts=3).action == "fail"
    assert classify(PolicyBlock("pii"), attempt=1, max_attempts=9).action == "fail"
    assert classify(ProviderAuthError("401"), attempt=1, max_attempts=9).action == "pause"
    bug = classify(KeyError("k"), attempt=1, max_attempts=3)
    assert (bug.action, bug.error_code) == ("fail", "unhandled_error")
    assert "KeyError" in bug.error_summary
    opted = classify(KeyError("k"), attempt=1, max_attempts=3,
                     policy=RetryPolicy(retry_unknown=True))
    assert opted.action == "retry"
