"""The one retry loop every commit goes through (commit/retry.py): the ``commit.retry.*`` properties, backoff,
refresh before each retry, and which errors end a commit at once."""
import pytest

from sparkberg.commit.retry import RetryPolicy, retrying
from sparkberg.errors import CommitFailedException, ValidationError


def test_policy_from_table_properties():
    assert RetryPolicy.of({}) == RetryPolicy(4, 100, 60_000, 1_800_000)
    p = RetryPolicy.of({"commit.retry.num-retries": "7", "commit.retry.min-wait-ms": "1",
                        "commit.retry.max-wait-ms": "3", "commit.retry.total-timeout-ms": "500"})
    assert p == RetryPolicy(7, 1, 3, 500)
    assert all(0.5 <= p.wait_ms(1) <= 1 and 1.5 <= p.wait_ms(3) <= 3 for _ in range(50))  # capped, jittered
    for key, value in (("commit.retry.num-retries", "x"), ("commit.retry.min-wait-ms", "-1")):
        with pytest.raises(ValidationError, match=f"{key}.*{value!r}"):
            RetryPolicy.of({key: value})


def test_a_lost_race_is_retried_on_a_refreshed_table_then_raised():
    calls, refreshes = [], []

    def attempt(n):
        calls.append(n)
        if n < 2:
            raise CommitFailedException("lost")
        return "committed"
    policy = RetryPolicy(3, 0, 0, 60_000)
    assert retrying(policy, attempt, lambda: refreshes.append(1)) == "committed"
    assert calls == [0, 1, 2] and len(refreshes) == 2

    def always(n):
        calls.append(n)
        raise CommitFailedException(f"lost {n}")
    calls.clear()
    with pytest.raises(CommitFailedException, match="lost 3"):
        retrying(policy, always, lambda: None)
    assert calls == [0, 1, 2, 3]


def test_other_errors_and_the_timeout_end_a_commit():
    calls = []

    def bad(n):
        calls.append(n)
        raise ValidationError("conflict that a retry cannot fix")
    with pytest.raises(ValidationError):
        retrying(RetryPolicy(5, 0, 0, 60_000), bad, lambda: None)
    assert calls == [0]

    def lost(n):
        calls.append(n)
        raise CommitFailedException("lost")
    calls.clear()
    with pytest.raises(CommitFailedException):
        retrying(RetryPolicy(100, 0, 0, 0), lost, lambda: None)  # (no time left for a retry)
    assert len(calls) <= 2
