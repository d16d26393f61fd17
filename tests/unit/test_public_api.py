import tether
from tether import errors

PUBLIC = {
    "Attempt", "Budget", "BudgetExhausted", "CallEstimate", "Checkpoint", "Clock",
    "ControlSignal", "CostEstimate", "Estimate", "Event", "FakeClock", "IdempotencyConflict",
    "InvalidPayload", "Job", "JobCancelled", "JobContext", "JobNotFound", "JobPaused",
    "JobState", "JobStateError", "JournalEntry", "LeaseLost", "LedgerEntry", "Metered",
    "PolicyBlock", "ProviderError", "Tether", "TetherError", "TransientError", "UnknownJobType",
    "Usage", "WorkerShutdown", "stage",
    # workflows (issue 22): gather's failure value, its errors, the wait record
    "ChildFailure", "ChildJobFailed", "JobWaiting", "SignalTimeout", "Wait",
    # a wait's callback URL, as ctx.wait_for_signal(callback=) hands it to job code
    "Callback",
    # outbound webhooks: settings, the records the facade returns, their errors
    "Delivery", "DeliveryAttempt", "Subscription", "WebhookNotFound", "WebhookSettings",
    "WebhookTargetRefused",
}


def test_all_is_pinned():
    assert set(tether.__all__) == PUBLIC
    for name in tether.__all__:
        assert hasattr(tether, name)


def test_one_tree_with_stable_codes():
    for code, cls in errors.ERROR_CODES.items():
        assert cls.code == code
        assert issubclass(cls, (errors.TetherError, errors.ControlSignal))
    for sig in (errors.JobCancelled, errors.JobPaused, errors.LeaseLost,
                errors.BudgetExhausted, errors.WorkerShutdown):
        assert not issubclass(sig, Exception), "job code must not be able to swallow signals"
